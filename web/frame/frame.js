// mlx-metrics panel frame: the glue between the host's <mlx-metrics-panel>
// element (parent window) and the go-app panel (this document). It runs
// before the wasm loads, so nothing the host sends early is lost:
//   parent -> frame  {mlxMetrics: "connection", connection: {apiBase, eventsUrl, token?}}
//   parent -> frame  {mlxMetrics: "theme", scheme: "light"|"dark", vars: {...}}
//   frame -> parent  {mlxMetrics: "ready"} and {mlxMetrics: "size", height}
// The panel reads window.mlxMetricsConnection on start and listens for the
// mlx-metrics-connection and mlx-metrics-theme window events afterwards.
(function () {
  "use strict";
  const embedded = window.parent !== window;
  const root = document.documentElement;

  // The host's documented custom properties, mapped to the frame's own.
  const themeVars = {
    "--mlx-metrics-bg": "--mm-bg",
    "--mlx-metrics-surface": "--mm-surface",
    "--mlx-metrics-fg": "--mm-fg",
    "--mlx-metrics-muted": "--mm-muted",
    "--mlx-metrics-border": "--mm-border",
    "--mlx-metrics-accent": "--mm-accent",
    "--mlx-metrics-danger": "--mm-danger",
    "--mlx-metrics-font": "--mm-font",
  };

  const prefersDark = window.matchMedia("(prefers-color-scheme: dark)");
  let explicitScheme = "";
  function applyScheme() {
    root.dataset.theme = explicitScheme || (prefersDark.matches ? "dark" : "light");
    window.dispatchEvent(new CustomEvent("mlx-metrics-theme"));
  }
  prefersDark.addEventListener("change", applyScheme);
  applyScheme();

  function applyTheme(msg) {
    explicitScheme = msg.scheme === "dark" || msg.scheme === "light" ? msg.scheme : "";
    const vars = msg.vars || {};
    for (const [hostName, name] of Object.entries(themeVars)) {
      const v = typeof vars[hostName] === "string" ? vars[hostName].trim() : "";
      // setProperty cannot inject rules, but refuse anything but a value.
      if (v && !/[;{}<>]/.test(v)) root.style.setProperty(name, v);
      else root.style.removeProperty(name);
    }
    applyScheme();
  }

  function setConnection(c) {
    if (!c || typeof c.apiBase !== "string" || c.apiBase === "") return;
    const conn = {
      apiBase: c.apiBase.replace(/\/+$/, ""),
      eventsUrl: typeof c.eventsUrl === "string" && c.eventsUrl ? c.eventsUrl : c.apiBase.replace(/\/+$/, "") + "/stream",
    };
    // The bearer token for changes, when the backend asks for one; never put in a URL.
    if (typeof c.token === "string" && /^[\x21-\x7e]{1,4096}$/.test(c.token)) conn.token = c.token;
    window.mlxMetricsConnection = conn;
    window.dispatchEvent(new CustomEvent("mlx-metrics-connection", { detail: conn }));
  }

  window.addEventListener("message", (e) => {
    // Only the embedding page speaks to the frame.
    if (!embedded || e.source !== window.parent) return;
    const msg = e.data;
    if (!msg || typeof msg !== "object") return;
    if (msg.mlxMetrics === "connection") setConnection(msg.connection);
    else if (msg.mlxMetrics === "theme") applyTheme(msg);
  });

  if (!embedded) return;
  root.classList.add("embedded");
  window.parent.postMessage({ mlxMetrics: "ready" }, "*");

  // Report the content height so the element can size the frame to it. The
  // message carries only a number; "*" is fine for the target.
  let last = -1;
  function report() {
    const h = Math.ceil(document.body ? document.body.scrollHeight : root.scrollHeight);
    if (h !== last) {
      last = h;
      window.parent.postMessage({ mlxMetrics: "size", height: h }, "*");
    }
  }
  const ro = new ResizeObserver(report);
  function observe() {
    ro.observe(document.body);
    report();
  }
  if (document.body) observe();
  else document.addEventListener("DOMContentLoaded", observe);
})();
