// Continuo dashboard: progressive enhancement only. Every page reads
// without this script; with it, parts of a page that say data-live="URL"
// follow server-sent events from URL (see the run page).
"use strict";
(function () {
  // A run's output: data-live names its events (dash_runs_events.go).
  // "log" events append their text; "state" and "end" update the badge
  // marked data-live-state; after "end" the stream is closed and the
  // elements marked data-live-running are hidden, those marked
  // data-live-ended shown.
  var out = document.querySelector("pre[data-live]");
  if (!out || !window.EventSource || !window.JSON) {
    return;
  }
  var badge = document.querySelector("[data-live-state]");
  var es = new EventSource(out.getAttribute("data-live"));
  function line(kind, text) {
    var near = out.scrollHeight - out.scrollTop - out.clientHeight < 40;
    var span = document.createElement("span");
    span.className = "ev ev-" + kind;
    span.textContent = text; // text, never markup
    out.appendChild(span);
    if (near) {
      out.scrollTop = out.scrollHeight;
    }
  }
  function state(m) {
    var s = JSON.parse(m.data);
    if (badge) {
      badge.textContent = s.state;
      badge.className = "badge badge-" + s.state;
    }
    return s;
  }
  es.addEventListener("log", function (m) {
    var e = JSON.parse(m.data);
    line(e.kind, e.text);
  });
  es.addEventListener("gap", function () {
    line("gap", "… part of the output was dropped from the log …\n");
  });
  es.addEventListener("state", state);
  es.addEventListener("end", function (m) {
    state(m);
    es.close();
    document.body.classList.add("runs-ended");
    var ended = document.querySelectorAll("[data-live-ended]");
    for (var i = 0; i < ended.length; i++) {
      ended[i].hidden = false;
    }
  });
})();
