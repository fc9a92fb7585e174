// Follows a page whose state a worker changes (a bundle being checked, a regrade running)
// without a timed refresh: every few seconds it fetches the page again and puts the new
// content of the watched part in place; when its state changes it reloads the page once,
// moving focus to the watched part, which says what happened.
(function () {
  "use strict";
  var box = document.querySelector("[data-watch]");
  if (!box || !box.id) return;
  var flag = "grader-watched:" + window.location.pathname;
  try {
    if (window.sessionStorage.getItem(flag)) {
      window.sessionStorage.removeItem(flag);
      box.setAttribute("tabindex", "-1");
      box.focus();
    }
  } catch (e) { /* no storage: focus stays where the browser puts it */ }
  if (box.dataset.watch === "done") return;
  var every = (parseFloat(box.dataset.watch) || 2) * 1000;

  function poll() {
    fetch(window.location.href, {credentials: "same-origin", headers: {"Accept": "text/html"}})
      .then(function (response) {
        if (!response.ok) throw new Error("status " + response.status);
        return response.text();
      })
      .then(function (text) {
        var next = new DOMParser().parseFromString(text, "text/html").getElementById(box.id);
        if (!next || next.dataset.state !== box.dataset.state) {
          try { window.sessionStorage.setItem(flag, "1"); } catch (e) { /* see above */ }
          window.location.reload();
          return;
        }
        if (next.innerHTML !== box.innerHTML) box.innerHTML = next.innerHTML;
        setTimeout(poll, every);
      })
      .catch(function () { setTimeout(poll, every * 2); });
  }
  setTimeout(poll, every);
})();
