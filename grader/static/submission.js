// Follows a submission while it is graded: polls its status, moves the progress bar,
// and shows the report (by reloading the page) once the grade is done; then moves focus to
// the result, so that a screen reader reads it out and a keyboard user starts there.
(function () {
  "use strict";
  var box = document.getElementById("progress");
  if (!box) return;
  // Focus goes to the result on the page that follows a grade to its end, and on the page a
  // sent form lands on when the grade was already done (editor.js leaves that mark).
  var flag = "grader-followed:" + window.location.pathname;
  var sent = "grader-sent";
  if (box.dataset.pending !== "true") {
    var result = document.getElementById("result");
    try {
      var store = window.sessionStorage;
      if ((store.getItem(flag) || store.getItem(sent)) && result) result.focus();
      store.removeItem(flag);
      store.removeItem(sent);
    } catch (e) { /* no storage: focus stays where the browser puts it */ }
    return;
  }
  try { window.sessionStorage.removeItem(sent); } catch (e) { /* see above */ }
  var bar = document.getElementById("bar");
  var count = document.getElementById("count");
  var state = document.getElementById("state");
  var delayed = document.getElementById("delayed");
  var delay = 300;

  function poll() {
    fetch(box.dataset.statusUrl, {headers: {"Accept": "application/json"}, credentials: "same-origin"})
      .then(function (response) {
        if (!response.ok) throw new Error("status " + response.status);
        return response.json();
      })
      .then(function (s) {
        if (s.status !== "queued" && s.status !== "running") {
          try { window.sessionStorage.setItem(flag, "1"); } catch (e) { /* see above */ }
          window.location.reload();
          return;
        }
        if (s.total > 0) {
          bar.max = s.total;
          bar.value = s.done;
          count.textContent = s.done + " / " + s.total;
        }
        box.dataset.status = s.status;
        if (delayed) delayed.hidden = !s.delayed;
        if (s.status === "running" && box.dataset.runningLabel) state.textContent = box.dataset.runningLabel;
        delay = Math.min(delay * 1.2, 2000);
        setTimeout(poll, delay);
      })
      .catch(function () { setTimeout(poll, 2000); });
  }
  setTimeout(poll, delay);
})();
