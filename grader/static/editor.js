// Python highlighting for the submission textarea. The textarea stays the real form
// field (it posts without this script); a highlighted copy is drawn underneath it and
// the textarea's own text is made transparent, so the caret and selection still work.
(function () {
  "use strict";
  var area = document.getElementById("source");
  if (!area) return;
  var box = area.parentElement;
  var code = box.querySelector(".highlight code");
  var keywords = ("False None True and as assert async await break class continue def del elif else " +
    "except finally for from global if import in is lambda nonlocal not or pass raise return try " +
    "while with yield").split(" ");
  var builtins = "print len range self super isinstance float int str list dict tuple torch".split(" ");
  var token = /("""[\s\S]*?(?:"""|$)|'''[\s\S]*?(?:'''|$)|"(?:\\.|[^"\\\n])*"?|'(?:\\.|[^'\\\n])*'?)|(#[^\n]*)|(\b\d[\d_]*(?:\.\d*)?(?:e[+-]?\d+)?\b)|(@[\w.]+)|([A-Za-z_]\w*)/g;

  function escape(text) {
    return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  }
  function span(kind, text) { return '<span class="tok-' + kind + '">' + escape(text) + "</span>"; }

  function highlight(text) {
    var out = "", last = 0, m;
    token.lastIndex = 0;
    while ((m = token.exec(text)) !== null) {
      out += escape(text.slice(last, m.index));
      if (m[1]) out += span("str", m[0]);
      else if (m[2]) out += span("com", m[0]);
      else if (m[3]) out += span("num", m[0]);
      else if (m[4]) out += span("dec", m[0]);
      else if (keywords.indexOf(m[0]) >= 0) out += span("kw", m[0]);
      else if (builtins.indexOf(m[0]) >= 0) out += span("bi", m[0]);
      else out += escape(m[0]);
      last = token.lastIndex;
    }
    return out + escape(text.slice(last)) + "\n";
  }
  function render() {
    code.innerHTML = highlight(area.value);
    sync();
  }
  function sync() {
    code.parentElement.scrollTop = area.scrollTop;
    code.parentElement.scrollLeft = area.scrollLeft;
  }

  box.classList.add("enhanced");
  area.addEventListener("input", render);
  area.addEventListener("scroll", sync);
  // Tab indents (four spaces); Escape then Tab leaves the editor, as keyboard users expect.
  var escaped = false;
  area.addEventListener("keydown", function (event) {
    if (event.key === "Escape") { escaped = true; return; }
    if (event.key === "Tab" && !event.shiftKey && !escaped) {
      event.preventDefault();
      var start = area.selectionStart, end = area.selectionEnd;
      area.setRangeText("    ", start, end, "end");
      render();
    }
    escaped = false;
  });
  render();

  // Ctrl+Enter (or Cmd+Enter) submits, as in most code editors.
  area.addEventListener("keydown", function (event) {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey) && area.form) {
      event.preventDefault();
      if (area.form.requestSubmit) area.form.requestSubmit(); else area.form.submit();
    }
  });
  var keys = document.getElementById("editor-keys");
  if (keys) keys.hidden = false;

  // A sent form leaves a mark for the page that shows its result (submission.js): that page
  // moves focus to the result even when the grade was done before the page was drawn. A mark
  // found here is from a send the server refused, and is dropped.
  var sent = "grader-sent";
  try { window.sessionStorage.removeItem(sent); } catch (e) { /* no storage */ }
  if (area.form) {
    area.form.addEventListener("submit", function () {
      try { window.sessionStorage.setItem(sent, "1"); } catch (e) { /* no storage */ }
    });
  }

  // A draft in this browser (localStorage), per form: kept as the student types, so that
  // nothing is lost to a closed tab, a failed request or a refusal. It is offered back, never
  // forced: the editor keeps what the page opened with until the student restores the draft.
  var store = null;
  try { store = window.localStorage; } catch (e) { store = null; }
  if (!store || !area.form) return;
  var key = "grader-draft:" + area.form.getAttribute("action");
  var saving = null;
  function save() {
    try {
      store.setItem(key, JSON.stringify({text: area.value, at: Date.now()}));
    } catch (e) { /* full or forbidden: the server-side copy is all there is */ }
  }
  area.addEventListener("input", function () {
    clearTimeout(saving);
    saving = setTimeout(save, 400);
  });
  area.form.addEventListener("submit", save);

  var draft = null;
  try { draft = JSON.parse(store.getItem(key) || "null"); } catch (e) { draft = null; }
  var offer = document.getElementById("draft-offer");
  // The same code as the page opened with (it was sent, or never changed): nothing to offer.
  if (!draft || typeof draft.text !== "string" || draft.text === area.value || !offer) return;
  if (area.dataset.origin === "refused") { save(); return; }  // the page gives back what was sent
  var text = offer.querySelector("[data-text]");
  text.textContent = text.dataset.text.replace("{when}", new Date(draft.at).toLocaleString());
  offer.hidden = false;
  document.getElementById("draft-restore").addEventListener("click", function () {
    area.value = draft.text;
    render();
    offer.hidden = true;
    area.focus();
  });
  document.getElementById("draft-discard").addEventListener("click", function () {
    store.removeItem(key);
    offer.hidden = true;
    area.focus();
  });
})();
