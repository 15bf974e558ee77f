// <mlx-metrics-panel>: the mlx-metrics panel as a custom element.
//
//   import "http://backend/api/metrics/panel.js";
//   const el = document.createElement("mlx-metrics-panel");
//   el.connection = { apiBase: "/api/metrics", eventsUrl: "/api/metrics/stream" };
//   // with `serve --token`, add the token the panel sends when it starts or cancels a run:
//   el.connection = { apiBase: "/api/metrics", token: "…" };
//   document.body.append(el);
//
// The panel is a go-app WebAssembly app, and go-app renders into a whole
// document. So the element keeps a shadow root holding one iframe of the
// backend's frame page: the app owns that document, host styles cannot reach
// in, and panel styles cannot leak out. The connection (relative URLs
// resolved against the loader's origin) and the theme (the documented --mlx-metrics-* custom properties
// and the colour scheme) go to the frame by postMessage; the frame reports
// its content height back and the element sizes itself to it, unless the
// element has the `fill` attribute, when the frame fills the element and
// scrolls inside. Removing the element removes the frame, which closes its
// stream.
const FRAME_URL = new URL("./panel/", import.meta.url);
const FRAME_ORIGIN = FRAME_URL.origin;
const DEFAULT_API = new URL(".", import.meta.url).href.replace(/\/+$/, "");

const THEME_VARS = [
  "--mlx-metrics-bg",
  "--mlx-metrics-surface",
  "--mlx-metrics-fg",
  "--mlx-metrics-muted",
  "--mlx-metrics-border",
  "--mlx-metrics-accent",
  "--mlx-metrics-danger",
  "--mlx-metrics-font",
];

const STYLE = `
:host { display: block; position: relative; min-height: 120px; contain: content; }
:host([hidden]) { display: none; }
iframe { display: block; width: 100%; height: 100%; min-height: 120px; border: 0; background: transparent; color-scheme: normal; }
:host([fill]) iframe { position: absolute; inset: 0; }
`;

// A relative connection URL ("/api/metrics") names a path on the backend
// the loader came from, whatever page embeds it: a host page on another
// origin that copies the README's snippet reaches the backend, and a host
// that serves the loader itself (the host's own module routes) resolves it
// against its own origin. Absolute URLs are taken as they are.
const LOADER_BASE = new URL("/", import.meta.url).href;

function resolve(url) {
  return new URL(url, LOADER_BASE).href;
}

/** Normalises a connection: absolute URLs, eventsUrl defaulting to apiBase/stream, and the
 * optional bearer token the backend's --token asks of changes (starting and cancelling runs). */
function normalize(c) {
  if (!c || typeof c !== "object" || typeof c.apiBase !== "string" || c.apiBase === "") {
    throw new TypeError("mlx-metrics-panel: connection needs {apiBase, eventsUrl}");
  }
  const apiBase = resolve(c.apiBase).replace(/\/+$/, "");
  const eventsUrl = c.eventsUrl ? resolve(c.eventsUrl) : apiBase + "/stream";
  if (c.token !== undefined && (typeof c.token !== "string" || !/^[\x21-\x7e]{1,4096}$/.test(c.token))) {
    throw new TypeError("mlx-metrics-panel: connection.token must be a bearer token (printable ASCII)");
  }
  return Object.freeze(c.token ? { apiBase, eventsUrl, token: c.token } : { apiBase, eventsUrl });
}

export class MlxMetricsPanel extends HTMLElement {
  #connection = null;
  #frame = null;
  #ready = false;
  #height = 0; // the panel's content height, last reported by the frame
  #onMessage = (e) => this.#message(e);
  #themeObserver = null;
  #schemeQuery = window.matchMedia("(prefers-color-scheme: dark)");
  #onScheme = () => this.#postTheme();

  constructor() {
    super();
    const root = this.attachShadow({ mode: "open" });
    const style = document.createElement("style");
    style.textContent = STYLE;
    root.append(style);
  }

  static get observedAttributes() {
    return ["theme", "fill"];
  }

  /** The connection {apiBase, eventsUrl}; setting it reconnects the panel. */
  get connection() {
    return this.#connection;
  }

  set connection(c) {
    this.#connection = normalize(c);
    this.#postConnection();
  }

  connectedCallback() {
    if (!this.#connection) this.#connection = normalize({ apiBase: DEFAULT_API });
    window.addEventListener("message", this.#onMessage);
    this.#schemeQuery.addEventListener("change", this.#onScheme);
    // Theme custom properties may change with the host's classes or styles.
    this.#themeObserver = new MutationObserver(() => this.#postTheme());
    for (const el of [this, document.documentElement, document.body]) {
      if (el) this.#themeObserver.observe(el, { attributes: true, attributeFilter: ["class", "style", "theme", "data-theme"] });
    }
    if (!this.#frame) {
      const f = document.createElement("iframe");
      f.title = "Metrics";
      f.src = FRAME_URL.href;
      // No sandbox attribute: the frame needs scripts and its own origin (the
      // backend's), and with both a sandbox protects nothing. The host is
      // protected by the same-origin policy when origins differ.
      f.setAttribute("part", "frame");
      this.#ready = false;
      this.#frame = f;
      this.shadowRoot.append(f);
    }
  }

  disconnectedCallback() {
    window.removeEventListener("message", this.#onMessage);
    this.#schemeQuery.removeEventListener("change", this.#onScheme);
    this.#themeObserver?.disconnect();
    // Dropping the frame ends its browsing context, and with it the stream.
    this.#frame?.remove();
    this.#frame = null;
    this.#ready = false;
  }

  attributeChangedCallback(name) {
    if (name === "fill") this.#size();
    else this.#postTheme();
  }

  #message(e) {
    if (!this.#frame || e.source !== this.#frame.contentWindow || e.origin !== FRAME_ORIGIN) return;
    const msg = e.data;
    if (!msg || typeof msg !== "object") return;
    if (msg.mlxMetrics === "ready") {
      this.#ready = true;
      this.#postConnection();
      this.#postTheme();
    } else if (msg.mlxMetrics === "size" && typeof msg.height === "number") {
      this.#height = Math.max(120, Math.ceil(msg.height));
      this.#size();
    }
  }

  /** Sizes the frame to the panel's content, or lets it fill the element. */
  #size() {
    if (!this.#frame) return;
    this.#frame.style.height = this.hasAttribute("fill") || !this.#height ? "" : this.#height + "px";
  }

  #post(msg) {
    if (this.#ready && this.#frame?.contentWindow) this.#frame.contentWindow.postMessage(msg, FRAME_ORIGIN);
  }

  #postConnection() {
    if (this.#connection) this.#post({ mlxMetrics: "connection", connection: { ...this.#connection } });
  }

  #postTheme() {
    const cs = getComputedStyle(this);
    const vars = {};
    for (const name of THEME_VARS) {
      const v = cs.getPropertyValue(name).trim();
      if (v) vars[name] = v;
    }
    let scheme = this.getAttribute("theme") || "";
    if (scheme !== "light" && scheme !== "dark") {
      const cssScheme = cs.colorScheme || "";
      scheme = cssScheme === "dark" ? "dark" : cssScheme === "light" ? "light" : "";
    }
    this.#post({ mlxMetrics: "theme", scheme, vars });
  }
}

if (!customElements.get("mlx-metrics-panel")) {
  customElements.define("mlx-metrics-panel", MlxMetricsPanel);
}
