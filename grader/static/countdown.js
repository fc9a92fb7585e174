// The countdown of a timed assignment. The page says how many seconds were left by the
// grader's clock when it was made (data-seconds-left); counting down from that, not from
// the browser's clock, keeps a wrong computer clock from showing a wrong end. The grader
// refuses a late submission whatever this shows; at zero the submit button is disabled
// only so that nobody sends work that would be refused.
(function () {
  "use strict";
  var timers = document.querySelectorAll(".countdown[data-seconds-left]");
  if (!timers.length) return;
  var loaded = Date.now();

  function two(n) { return (n < 10 ? "0" : "") + n; }
  function shown(seconds) {
    var h = Math.floor(seconds / 3600), m = Math.floor(seconds % 3600 / 60), s = seconds % 60;
    return (h ? h + ":" + two(m) : m) + ":" + two(s);
  }
  function tick() {
    var running = false;
    Array.prototype.forEach.call(timers, function (timer) {
      var left = Number(timer.getAttribute("data-seconds-left")) - Math.floor((Date.now() - loaded) / 1000);
      if (left > 0) {
        timer.textContent = shown(left);
        running = true;
        return;
      }
      timer.textContent = timer.getAttribute("data-done");
      var submit = document.querySelector("#submit-form .actions button[type=submit]:not([formaction])");
      if (submit) submit.disabled = true;
    });
    if (running) window.setTimeout(tick, 1000 - (Date.now() - loaded) % 1000);
  }
  tick();
})();
