// Tribunal's dashboard: the CSRF header on every HTMX request, refusals shown where the answer
// goes, and one server-sent event stream per page that asks the page's parts to refresh.
(function () {
  "use strict";
  document.addEventListener("DOMContentLoaded", function () {
    var meta = document.querySelector('meta[name="csrf-token"]');
    var csrf = meta ? meta.getAttribute("content") : "";
    document.body.addEventListener("htmx:configRequest", function (event) {
      event.detail.headers["X-CSRF-Token"] = csrf;
    });
    // A refusal (403), a conflict (409) or a bad form (400) says why: show it, like an answer.
    document.body.addEventListener("htmx:beforeSwap", function (event) {
      var status = event.detail.xhr.status;
      if (status === 400 || status === 403 || status === 409 || status === 202) {
        event.detail.shouldSwap = true;
        event.detail.isError = false;
      }
    });
    if (!meta || !window.EventSource) {
      return;
    }
    var live = document.getElementById("live");
    var source = new EventSource("/events");
    source.addEventListener("open", function () {
      if (live) live.classList.add("on");
    });
    source.addEventListener("error", function () {
      if (live) live.classList.remove("on");
    });
    source.addEventListener("change", function () {
      document.body.dispatchEvent(new CustomEvent("tribunal-change"));
    });
  });
})();
