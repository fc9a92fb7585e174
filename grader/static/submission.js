// Follows a submission while it is graded: polls its status, moves the progress bar,
// and shows the report (by reloading the page) once the grade is done.
(function () {
  "use strict";
  var box = document.getElementById("progress");
  if (!box || box.dataset.pending !== "true") return;
  var bar = document.getElementById("bar");
  var count = document.getElementById("count");
  var state = document.getElementById("state");
  var delay = 300;

  function poll() {
    fetch(box.dataset.statusUrl, {headers: {"Accept": "application/json"}, credentials: "same-origin"})
      .then(function (response) {
        if (!response.ok) throw new Error("status " + response.status);
        return response.json();
      })
      .then(function (s) {
        if (s.status !== "queued" && s.status !== "running") {
          window.location.reload();
          return;
        }
        if (s.total > 0) {
          bar.max = s.total;
          bar.value = s.done;
          count.textContent = s.done + " / " + s.total;
        }
        box.dataset.status = s.status;
        if (s.status === "running" && box.dataset.runningLabel) state.textContent = box.dataset.runningLabel;
        delay = Math.min(delay * 1.2, 2000);
        setTimeout(poll, delay);
      })
      .catch(function () { setTimeout(poll, 2000); });
  }
  setTimeout(poll, delay);
})();
