// ocm-rollout dashboard: the page. Plain JavaScript, no build step, no third-party code.
//
// Routes (the URL's hash): #/ the rollouts list, #/rollouts/mwrs/NS/NAME, #/rollouts/addon/NAME,
// #/placements/NS/NAME, #/fleet. The page fetches its view's JSON from /api/..., draws it with DOM
// calls only (text is always set as text, never as HTML), and fetches again when the server's
// event stream (/api/stream) says the hub changed. Every state carries words and a symbol, never
// colour alone; every control is a native link, button or select, so the keyboard reaches it.
"use strict";

const CSRF = document.querySelector('meta[name="csrf-token"]').content;
const READ_ONLY = document.querySelector('meta[name="read-only"]').content === "true";
const SYMBOLS = {
  Succeeded: "✓", Failed: "✗", TimeOut: "⌛", Progressing: "↻", Validating: "?", ToApply: "•", Skip: "–",
  Complete: "✓", Paused: "⏸", Aborted: "⨯", "Awaiting promotion": "⏵", Pending: "…",
};
const CHIP_ORDER = ["Failed", "TimeOut", "Validating", "Progressing", "ToApply", "Skip", "Succeeded"];
const VERB_TEXT = {
  pause: "Pause", resume: "Resume", abort: "Abort", retry: "Retry", undo: "Undo", promote: "Promote",
};
const VERB_HELP = {
  pause: "No ManifestWork is created, updated or deleted (no add-on configuration is rolled out) until resumed.",
  resume: "The rollout goes on from where it stopped.",
  abort: "The rollout in progress stops and every cluster returns to the last good revision.",
  retry: "The aborted rollout starts again.",
  undo: "The template goes back to the chosen revision, which then rolls out under the strategy.",
  promote: "The decision group waiting at the promotion gate is allowed to roll out.",
};

const state = { route: null, shown: "", expand: new Set(), lastResult: null, diff: null, fleetQuery: "", fleetPage: 0 };

// -- DOM helpers ----------------------------------------------------------------------------------
function h(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "text") node.textContent = value;
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function stateBadge(text, testid) {
  const cls = "badge st-" + String(text).replace(/\s+/g, "-");
  return h("span", { class: cls, "data-testid": testid }, h("span", { "aria-hidden": "true" }, (SYMBOLS[text] || "") + " "), text);
}

function age(seconds) {
  if (seconds === null || seconds === undefined) return "-";
  const s = Math.floor(seconds);
  if (s < 120) return s + "s";
  if (s < 7200) return Math.floor(s / 60) + "m";
  if (s < 172800) return Math.floor(s / 3600) + "h";
  return Math.floor(s / 86400) + "d";
}

function progress(counts, total) {
  const done = counts.Succeeded || 0;
  const parts = [];
  const bar = h("span", { class: "bar", "aria-hidden": "true" });
  for (const s of ["Succeeded", "Failed", "TimeOut", "Validating", "Progressing", "ToApply", "Skip"]) {
    const n = counts[s] || 0;
    if (!n) continue;
    parts.push(n + " " + s);
    bar.append(h("span", { class: "seg st-" + s, style: null, "data-w": n }));
  }
  // Widths are set through the style property (the CSP allows no inline style attributes).
  for (const seg of bar.children) seg.style.width = (100 * Number(seg.dataset.w)) / Math.max(total, 1) + "%";
  const text = total ? `${done}/${total} succeeded` : "no clusters";
  return h("span", { class: "progress", title: parts.join(", ") || "no clusters" }, bar,
    h("span", { class: "progress-text" }, text), h("span", { class: "sr-only" }, parts.length ? " (" + parts.join(", ") + ")" : ""));
}

function link(href, text, attrs) {
  return h("a", Object.assign({ href }, attrs || {}), text);
}

function rolloutHref(r) {
  return r.kind === "mwrs" ? `#/rollouts/mwrs/${encodeURIComponent(r.namespace)}/${encodeURIComponent(r.name)}`
    : `#/rollouts/addon/${encodeURIComponent(r.name)}`;
}

function placementHref(namespace, name) {
  return `#/placements/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}`;
}

// -- fetching -------------------------------------------------------------------------------------
async function api(path) {
  const response = await fetch(path, { headers: { Accept: "application/json" }, credentials: "same-origin" });
  let body = null;
  try { body = await response.json(); } catch (e) { body = { error: response.statusText }; }
  if (!response.ok) throw new Error(body && body.error ? body.error : response.status + " " + response.statusText);
  return body;
}

async function act(payload) {
  const response = await fetch("/api/actions", {
    method: "POST", credentials: "same-origin",
    headers: { "Content-Type": "application/json", "X-CSRF-Token": CSRF },
    body: JSON.stringify(payload),
  });
  let body = null;
  try { body = await response.json(); } catch (e) { body = { error: response.status + " " + response.statusText }; }
  if (!response.ok) throw new Error(body.error || response.status + " " + response.statusText);
  return body.message;
}

// -- routing --------------------------------------------------------------------------------------
function parseRoute() {
  const hash = location.hash.replace(/^#/, "") || "/";
  const [path, query] = hash.split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  const params = new URLSearchParams(query || "");
  if (parts[0] === "rollouts" && parts[1] === "mwrs" && parts.length === 4) return { view: "mwrs", namespace: parts[2], name: parts[3], params };
  if (parts[0] === "rollouts" && parts[1] === "addon" && parts.length === 3) return { view: "addon", name: parts[2], params };
  if (parts[0] === "placements" && parts.length === 3) return { view: "placement", namespace: parts[1], name: parts[2], params };
  if (parts[0] === "fleet") return { view: "fleet", params };
  return { view: "list", params };
}

function apiPath(route) {
  const expand = [...state.expand].map((e) => "expand=" + encodeURIComponent(e)).join("&");
  switch (route.view) {
    case "mwrs": return `/api/rollouts/mwrs/${encodeURIComponent(route.namespace)}/${encodeURIComponent(route.name)}?${expand}`;
    case "addon": return `/api/rollouts/addon/${encodeURIComponent(route.name)}?${expand}`;
    case "placement": return `/api/placements/${encodeURIComponent(route.namespace)}/${encodeURIComponent(route.name)}`;
    case "fleet": return `/api/fleet?q=${encodeURIComponent(state.fleetQuery)}&page=${state.fleetPage}`;
    default: return "/api/overview";
  }
}

let refreshing = null;
let again = false;

async function refresh() {
  if (refreshing) { again = true; return refreshing; }
  refreshing = (async () => {
    do {
      again = false;
      const route = parseRoute();
      let data;
      try {
        data = await api(apiPath(route));
      } catch (error) {
        draw(route, null, error.message);
        continue;
      }
      const text = JSON.stringify(data);
      if (text === state.shown && sameRoute(route, state.route)) continue;
      state.shown = text;
      draw(route, data, null);
    } while (again);
  })();
  try { await refreshing; } finally { refreshing = null; }
}

function sameRoute(a, b) {
  return b && a.view === b.view && a.namespace === b.namespace && a.name === b.name;
}

function draw(route, data, error) {
  const main = document.getElementById("main");
  const focused = document.activeElement && document.activeElement.dataset ? document.activeElement.dataset.key : null;
  const changedRoute = !sameRoute(route, state.route);
  state.route = route;
  const views = { list: drawList, mwrs: drawRollout, addon: drawRollout, placement: drawPlacement, fleet: drawFleet };
  const content = error ? h("div", { class: "error", role: "alert" }, h("h1", {}, "Cannot show this page"), h("p", {}, error), h("p", {}, link("#/", "Back to the rollouts")))
    : views[route.view](data, route);
  main.replaceChildren(...[content].flat(Infinity).filter((c) => c !== null && c !== undefined && c !== false));
  if (data && data.unsynced && data.unsynced.length) {
    main.prepend(h("p", { class: "note", role: "status" }, "Waiting for the hub to list: " + data.unsynced.join(", ") +
      " (not answered yet, or refused to this kubeconfig's identity)."));
  }
  for (const a of document.querySelectorAll("nav a")) {
    const current = a.dataset.nav === (route.view === "fleet" ? "fleet" : route.view === "list" ? "list" : "");
    if (current) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
  }
  if (focused) {
    const again = main.querySelector(`[data-key="${CSS.escape(focused)}"]`);
    if (again) again.focus({ preventScroll: true });
  } else if (changedRoute) {
    const heading = main.querySelector("h1");
    if (heading) { heading.setAttribute("tabindex", "-1"); heading.focus({ preventScroll: true }); }
  }
}

// -- the rollouts list ----------------------------------------------------------------------------
function filterSelect(id, label, options, value, onChange) {
  const select = h("select", { id, "data-key": id, onchange: (e) => onChange(e.target.value) },
    h("option", { value: "" }, "all"), options.map((o) => h("option", { value: o, selected: o === value }, o)));
  return h("label", { for: id }, label + " ", select);
}

function setFilter(key, value) {
  const route = parseRoute();
  const params = new URLSearchParams(route.params);
  if (value) params.set(key, value); else params.delete(key);
  const query = params.toString();
  history.replaceState(null, "", "#/" + (query ? "?" + query : ""));
  state.shown = "";
  refresh();
}

function drawList(data, route) {
  const ns = route.params.get("namespace") || "";
  const kind = route.params.get("kind") || "";
  const st = route.params.get("state") || "";
  const rows = data.rollouts.filter((r) => (!ns || r.namespace === ns) && (!kind || r.kind === kind) && (!st || r.state === st));
  const filters = h("div", { class: "filters", role: "group", "aria-label": "Filters" },
    filterSelect("filter-namespace", "Namespace", data.namespaces, ns, (v) => setFilter("namespace", v)),
    filterSelect("filter-kind", "Kind", ["mwrs", "addon"], kind, (v) => setFilter("kind", v)),
    filterSelect("filter-state", "State", data.states, st, (v) => setFilter("state", v)));
  const table = h("table", { "data-testid": "rollouts" },
    h("caption", { class: "sr-only" }, "Rollouts"),
    h("thead", {}, h("tr", {}, ["Kind", "Namespace", "Name", "Strategy", "State", "Progress", "Failed", "Age"].map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, rows.map((r) => h("tr", { "data-rollout": r.key },
      h("td", {}, r.kind === "mwrs" ? "ManifestWorkReplicaSet" : "ClusterManagementAddOn"),
      h("td", {}, r.namespace || "-"),
      h("td", {}, link(rolloutHref(r), r.name, { "data-testid": "open", "data-key": "open:" + r.key })),
      h("td", {}, r.strategy),
      h("td", { "data-col": "state" }, stateBadge(r.state)),
      h("td", {}, progress(r.counts, r.total)),
      h("td", {}, String(r.failuresTotal)),
      h("td", {}, age(r.age))))));
  const empty = data.rollouts.length === 0 ? h("p", { class: "note" }, "No ManifestWorkReplicaSet and no ClusterManagementAddOn with a configuration rollout (install strategy Placements) yet.")
    : rows.length === 0 ? h("p", { class: "note" }, "No rollout matches the filters.") : null;
  return [h("h1", {}, "Rollouts"), filters, table, empty];
}

// -- a rollout ------------------------------------------------------------------------------------
function resultArea() {
  const r = state.lastResult;
  if (!r || !sameRoute(parseRoute(), r.route)) return null;
  return r.error ? h("div", { role: "alert", class: "error", "data-testid": "action-error" }, r.error)
    : h("div", { role: "status", class: "ok", "data-testid": "action-result" }, r.message);
}

async function confirmAction(title, text, extra) {
  const dialog = document.getElementById("confirm");
  document.getElementById("confirm-title").textContent = title;
  document.getElementById("confirm-text").textContent = text;
  const slot = document.getElementById("confirm-extra");
  slot.replaceChildren(...(extra ? [extra] : []));
  const before = document.activeElement;
  return new Promise((resolve) => {
    const yes = document.getElementById("confirm-yes");
    const no = document.getElementById("confirm-no");
    const done = (answer) => {
      yes.onclick = no.onclick = null;
      dialog.oncancel = null;
      if (dialog.open) dialog.close();
      if (before && before.focus) before.focus();
      resolve(answer);
    };
    yes.onclick = () => done(true);
    no.onclick = () => done(false);
    dialog.oncancel = (e) => { e.preventDefault(); done(false); };
    dialog.showModal();
    no.focus();
  });
}

async function runAction(data, verb, extraPayload, title, extra, readExtra) {
  const what = data.kind === "mwrs" ? `ManifestWorkReplicaSet ${data.namespace}/${data.name}` : `ClusterManagementAddOn ${data.name}`;
  const where = extraPayload.placement ? ` (placement ${extraPayload.placement})` : "";
  const ok = await confirmAction(title || `${VERB_TEXT[verb]} ${what}${where}?`, VERB_HELP[verb], extra);
  if (!ok) return;
  const payload = Object.assign({ verb, kind: data.kind, namespace: data.namespace || null, name: data.name }, extraPayload, readExtra ? readExtra() : {});
  const route = parseRoute();
  try {
    const message = await act(payload);
    state.lastResult = { route, message };
  } catch (error) {
    state.lastResult = { route, error: error.message };
  }
  state.shown = "";
  await refresh();
}

function actionButton(data, verb, availability, payload, key) {
  const a = availability || { enabled: false, reason: "not available" };
  const id = "why-" + key.replace(/[^a-zA-Z0-9_-]/g, "_");
  return h("span", { class: "action" },
    h("button", {
      type: "button", "data-action": verb, "data-key": "action:" + key, disabled: !a.enabled,
      "aria-describedby": a.enabled ? null : id, title: a.enabled ? VERB_HELP[verb] : a.reason,
      onclick: () => runAction(data, verb, payload || {}),
    }, VERB_TEXT[verb]),
    a.enabled ? null : h("span", { id, class: "sr-only" }, a.reason));
}

function undoButton(data, undo) {
  const key = "undo";
  if (!undo || !undo.enabled) return actionButton(data, "undo", undo, {}, key);
  const pick = () => {
    const select = h("select", { id: "undo-revision", "data-testid": "undo-revision" },
      undo.revisions.map((r) => h("option", { value: r.revision, selected: r.revision === undo.default },
        `revision ${r.revision}` + (r.markers.length ? ` (${r.markers.join(", ")})` : ""))));
    return h("label", { for: "undo-revision" }, "Roll back to ", select);
  };
  return h("span", { class: "action" }, h("button", {
    type: "button", "data-action": "undo", "data-key": "action:undo", title: VERB_HELP.undo,
    onclick: () => {
      const extra = pick();
      runAction(data, "undo", {}, `Undo ${data.namespace}/${data.name} to an earlier revision?`, extra,
        () => ({ toRevision: Number(document.getElementById("undo-revision").value) }));
    },
  }, "Undo…"));
}

function toolbar(data) {
  if (READ_ONLY || !data.actions) return null;
  const a = data.actions;
  const buttons = [
    actionButton(data, "pause", a.pause, {}, "pause"),
    actionButton(data, "resume", a.resume, {}, "resume"),
  ];
  if (data.kind === "mwrs") {
    buttons.push(actionButton(data, "abort", a.abort, {}, "abort"), actionButton(data, "retry", a.retry, {}, "retry"), undoButton(data, a.undo));
  }
  return h("div", { class: "toolbar", role: "toolbar", "aria-label": "Actions" }, buttons);
}

function placementActions(data, placement) {
  if (READ_ONLY || !data.actions) return null;
  const buttons = [];
  if (data.kind === "mwrs") {
    const promote = data.actions.promote[placement.name];
    if (promote) buttons.push(actionButton(data, "promote", promote, { placement: placement.name }, "promote:" + placement.name));
  } else {
    const mine = data.actions.placements[placement.name];
    if (mine) {
      buttons.push(actionButton(data, "abort", mine.abort, { placement: placement.name }, "abort:" + placement.name));
      buttons.push(actionButton(data, "retry", mine.retry, { placement: placement.name }, "retry:" + placement.name));
      if (mine.promote) buttons.push(actionButton(data, "promote", mine.promote, { placement: placement.name }, "promote:" + placement.name));
    }
  }
  return buttons.length ? h("div", { class: "toolbar", role: "toolbar", "aria-label": "Actions on placement " + placement.name }, buttons) : null;
}

function chip(c, groupKey) {
  const label = `${c.cluster}: ${c.state}` + (c.detail ? ` (${c.detail})` : "") + (c.reason ? ` — ${c.reason}` : "");
  return h("li", {},
    h("button", {
      type: "button", class: "chip st-" + c.state, "data-testid": "chip", "data-cluster": c.cluster, "data-state": c.state,
      "data-key": "chip:" + groupKey + ":" + c.cluster, title: c.reason || c.state, "aria-label": label,
    },
    h("span", { "aria-hidden": "true", class: "sym" }, SYMBOLS[c.state] || ""),
    h("span", { class: "chip-name" }, c.cluster),
    h("span", { class: "chip-state" }, c.state + (c.detail ? " · " + c.detail : "")),
    h("span", { class: "tip", role: "tooltip" }, c.reason || "no message")));
}

function countsText(counts) {
  return CHIP_ORDER.filter((s) => counts[s]).map((s) => `${counts[s]} ${s}`).join(", ") || "no clusters";
}

function groupItem(data, placement, g) {
  const groupKey = placement.name + ":" + g.index;
  const title = `Group ${g.index}` + (g.name ? ` (${g.name})` : "");
  const summary = g.aggregated ? h("p", { "data-testid": "group-summary", class: "summary" },
    `${g.total} clusters: ${countsText(g.counts)}. Showing the ${g.clusters.length} that need attention. `,
    h("button", { type: "button", "data-key": "expand:" + groupKey, onclick: () => { state.expand.add(groupKey); state.shown = ""; refresh(); } }, `Show all ${g.total}`))
    : null;
  const collapse = !g.aggregated && state.expand.has(groupKey) ? h("button", {
    type: "button", "data-key": "collapse:" + groupKey, onclick: () => { state.expand.delete(groupKey); state.shown = ""; refresh(); },
  }, "Show fewer") : null;
  return h("li", { "data-testid": "group", "data-index": g.index, class: g.current ? "group current" : "group", "aria-current": g.current ? "step" : null },
    h("h3", {}, title, g.current ? h("span", { class: "now" }, " — in flight") : null),
    h("p", { class: "group-line" }, progress(g.counts, g.total), " ", countsText(g.counts)),
    summary, collapse,
    g.clusters.length ? h("ul", { class: "chips", "aria-label": title + " clusters" }, g.clusters.map((c) => chip(c, groupKey))) : null);
}

function placementSection(data, p) {
  const [pns, pname] = data.kind === "mwrs" ? [data.namespace, p.name] : p.name.split("/");
  const notes = [];
  if (p.error) notes.push(h("p", { class: "error", role: "note" }, "⚠ " + p.error));
  if (p.breach) notes.push(h("p", { class: "error" }, "✗ maxFailures breached: no new cluster is rolled out until failures recover."));
  if (p.promotion) notes.push(h("p", { class: "note promotion" }, "⏵ " + p.promotion));
  if (p.aborted) notes.push(h("p", { class: "error" }, `⨯ Aborted at ${p.aborted.time} (revision ${p.aborted.revision})` +
    (p.aborted.returnsTo ? `; returning to ${p.aborted.returnsTo}` : "") + (p.aborted.blocked ? `; cannot return: ${p.aborted.blocked}` : "")));
  if (p.condition) notes.push(h("p", { class: "note" }, `Progressing ${p.condition.status} ${p.condition.reason}: ${p.condition.message}`));
  const failures = p.failures.length ? h("div", {}, h("h3", {}, `Failed clusters (${p.failuresTotal})`),
    h("ul", { "data-testid": "failures", class: "failures" }, p.failures.map((f) => h("li", {},
      h("strong", {}, f.cluster), ` ${SYMBOLS[f.state] || ""} ${f.state}: ${f.reason}`)))) : null;
  return h("section", { "data-placement": p.name, class: "placement", "aria-labelledby": "pl-" + p.name.replace(/[^a-zA-Z0-9_-]/g, "_") },
    h("h2", { id: "pl-" + p.name.replace(/[^a-zA-Z0-9_-]/g, "_") }, "Placement ", link(placementHref(pns, pname), p.name),
      ` — ${p.strategy}, ${p.selected} selected`),
    h("p", {}, progress(p.counts, Object.values(p.counts).reduce((a, b) => a + b, 0)), " ", countsText(p.counts),
      p.recheckAfter !== null && p.recheckAfter !== undefined ? ` · next check in ${Math.round(p.recheckAfter)}s` : ""),
    notes, placementActions(data, p), failures,
    p.groups.length ? h("ol", { class: "timeline", "aria-label": "Decision groups of " + p.name }, p.groups.map((g) => groupItem(data, p, g)))
      : h("p", { class: "note" }, "No cluster decided."));
}

function conditionsTable(conditions) {
  if (!conditions || !conditions.length) return h("p", { class: "note" }, "No conditions yet.");
  return h("table", { "data-testid": "conditions" },
    h("thead", {}, h("tr", {}, ["Type", "Status", "Reason", "Message", "Since"].map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, conditions.map((c) => h("tr", {}, h("td", {}, c.type), h("td", {}, c.status), h("td", {}, c.reason || ""),
      h("td", {}, c.message || ""), h("td", {}, c.lastTransitionTime || "")))));
}

function eventsList(events) {
  if (!events || !events.length) return h("p", { class: "note", "data-testid": "events" }, "No events.");
  return h("ol", { class: "events", "data-testid": "events" }, events.map((e) => h("li", { class: e.type === "Warning" ? "warning" : "" },
    h("time", {}, e.time), " ", h("strong", {}, (e.type === "Warning" ? "⚠ " : "") + e.type + " " + e.reason),
    e.count > 1 ? ` (×${e.count})` : "", ": ", e.message)));
}

function historyPart(data) {
  if (data.kind !== "mwrs") return null;
  const rows = data.history || [];
  if (!rows.length) return [h("h2", {}, "Revision history"), h("p", { class: "note" }, "No revision recorded yet.")];
  const numbers = rows.map((r) => r.revision);
  const from = h("select", { id: "diff-from", "data-key": "diff-from" }, numbers.map((n, i) => h("option", { value: n, selected: i === numbers.length - 2 }, `revision ${n}`)));
  const to = h("select", { id: "diff-to", "data-key": "diff-to" }, numbers.map((n, i) => h("option", { value: n, selected: i === numbers.length - 1 }, `revision ${n}`)));
  const compare = async () => {
    try {
      const d = await api(`/api/history/${encodeURIComponent(data.namespace)}/${encodeURIComponent(data.name)}/diff?from=${from.value}&to=${to.value}`);
      state.diff = { key: data.key, d };
    } catch (error) {
      state.diff = { key: data.key, error: error.message };
    }
    state.shown = "";
    refresh();
  };
  let diffView = null;
  if (state.diff && state.diff.key === data.key) {
    if (state.diff.error) diffView = h("p", { role: "alert", class: "error" }, state.diff.error);
    else {
      const d = state.diff.d;
      diffView = d.same ? h("p", { class: "note", "data-testid": "diff" }, `Revisions ${d.from} and ${d.to} hold the same template.`)
        : h("pre", { class: "diff", "data-testid": "diff", tabindex: "0", "aria-label": `Changes from revision ${d.from} to ${d.to}` },
          d.lines.map((line) => h("span", { class: line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : line.startsWith("@@") ? "hunk" : "" },
            (line.startsWith("+") && !line.startsWith("+++") ? "+ " : line.startsWith("-") && !line.startsWith("---") ? "- " : "") +
            (line.startsWith("+") || line.startsWith("-") ? line.slice(1) : line) + "\n")));
    }
  }
  return [h("h2", {}, "Revision history"),
    h("table", { "data-testid": "history" },
      h("thead", {}, h("tr", {}, ["Revision", "Hash", "Created", "Markers"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, rows.map((r) => h("tr", { class: r.update ? "update" : "" }, h("td", {}, String(r.revision)), h("td", {}, h("code", {}, r.hash || "-")),
        h("td", {}, r.created || ""), h("td", {}, [r.current && "current", r.update && "update", r.aborted && "aborted"].filter(Boolean).join(", ")))))),
    h("div", { class: "filters" }, h("label", { for: "diff-from" }, "From ", from), h("label", { for: "diff-to" }, "to ", to),
      h("button", { type: "button", "data-key": "diff-compare", onclick: compare }, "Compare templates")),
    diffView];
}

function mcaPart(data) {
  if (data.kind !== "addon" || !data.mcas) return null;
  const m = data.mcas;
  const hashes = (list) => list.length ? list.map((c) => `${c.resource}/${c.namespace ? c.namespace + "/" : ""}${c.name} ${c.specHash.slice(0, 12) || "-"}`).join("; ") : "-";
  return [h("h2", {}, `ManagedClusterAddOns (${m.total}, ${m.outOfSync} not yet on their desired configurations)`),
    h("table", { "data-testid": "mca-configs" },
      h("thead", {}, h("tr", {}, ["Cluster", "Desired configurations", "Applied configurations", "In sync"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, m.rows.map((r) => h("tr", {}, h("td", {}, r.cluster), h("td", {}, h("code", {}, hashes(r.desired))),
        h("td", {}, h("code", {}, hashes(r.applied))), h("td", {}, r.inSync ? "✓ yes" : "✗ no"))))),
    m.total > m.rows.length ? h("p", { class: "note" }, `Showing ${m.rows.length} of ${m.total}, those not in sync first.`) : null];
}

function drawRollout(data) {
  const kindName = data.kind === "mwrs" ? "ManifestWorkReplicaSet" : "ClusterManagementAddOn";
  const title = data.kind === "mwrs" ? `${data.namespace}/${data.name}` : data.name;
  const revisions = data.revisions ? h("p", {}, `Revisions: update ${data.revisions.update || "none yet"}, current ${data.revisions.current || "none yet"}` +
    (data.revisions.abortedTime ? `; aborted at ${data.revisions.abortedTime}` : "") + (data.revisions.paused ? "; paused (spec.paused)" : "")) : null;
  const progressing = (data.conditions || []).find((c) => c.type === "Progressing");
  const headline = (data.state === "Aborted" || data.state === "Failed") && progressing && progressing.message
    ? h("p", { class: "error", "data-testid": "rollout-message" }, progressing.message) : null;
  return [
    h("p", { class: "crumbs" }, link("#/", "Rollouts"), " / ", kindName),
    h("h1", {}, `${kindName} ${title} `, stateBadge(data.state, "rollout-state")),
    h("p", {}, progress(data.counts, data.total), ` ${countsText(data.counts)} · strategy ${data.strategy} · age ${age(data.age)}`),
    revisions, headline, toolbar(data), resultArea(),
    data.placements.length ? data.placements.map((p) => placementSection(data, p)) : h("p", { class: "note" }, "No placement to roll out through."),
    h("h2", {}, "Conditions"), conditionsTable(data.conditions),
    mcaPart(data),
    historyPart(data),
    h("h2", {}, "Events"), eventsList(data.events),
  ];
}

// -- a placement ----------------------------------------------------------------------------------
function kv(obj) {
  return Object.entries(obj || {}).map(([k, v]) => `${k}=${v}`).join(", ") || "-";
}

const STAGES = {
  clusterSet: "Not in a bound ManagedClusterSet", deleting: "Being deleted", predicate: "Filtered out by a predicate",
  taint: "A taint not tolerated", spread: "Held back by a spread constraint", score: "Not among the highest scores",
  numberOfClusters: "numberOfClusters reached", error: "Not scheduled",
};

function specLine(spec) {
  if (!spec) return null;
  const parts = [
    `numberOfClusters ${spec.numberOfClusters ?? "all"}`,
    `clusterSets ${spec.clusterSets && spec.clusterSets.length ? spec.clusterSets.join(", ") : "all bound"}`,
    `${spec.predicates} predicate(s)`, `${spec.tolerations} toleration(s)`,
    `prioritizers ${spec.prioritizerMode} (${spec.prioritizers} configured)`,
    spec.spreadPolicy ? `${spec.spreadTerms} spread term(s)` : "no spread",
    `groups ${spec.decisionGroups && spec.decisionGroups.length ? spec.decisionGroups.join(", ") : "none named"}, ${spec.clustersPerDecisionGroup} per group`,
    `sortBy ${spec.sortBy}`,
  ];
  return h("p", { class: "note" }, "Spec: " + parts.join(" · "));
}

function drawPlacement(data) {
  const parts = [
    h("p", { class: "crumbs" }, link("#/", "Rollouts"), " / Placement"),
    h("h1", { "data-testid": "placement" }, `Placement ${data.namespace}/${data.name}`),
    specLine(data.spec),
  ];
  if (data.error) parts.push(h("p", { class: "error", role: "note" }, "⚠ " + data.error));
  for (const w of data.warnings || []) parts.push(h("p", { class: "note" }, "Note: " + w));
  parts.push(h("p", {}, `${data.selected ?? 0} clusters selected`));
  if (data.usedBy && data.usedBy.length) {
    parts.push(h("p", {}, "Rolled out through by: ", data.usedBy.map((u, i) => [i ? ", " : "", link(rolloutHref(u), (u.namespace ? u.namespace + "/" : "") + u.name)])));
  }
  parts.push(h("h2", {}, "Conditions"), conditionsTable(data.conditions));
  parts.push(h("h2", {}, "Decisions by group and page"));
  const groups = data.groups || [];
  parts.push(groups.length ? h("ol", { class: "timeline", "data-testid": "decision-groups" }, groups.map((g) => h("li", { class: "group", "data-index": g.index },
    h("h3", {}, `Group ${g.index}` + (g.name ? ` (${g.name})` : "") + ` — ${g.count} cluster(s)`),
    h("ul", {}, (g.pages || []).map((p) => h("li", {}, h("code", {}, p.name), p.index !== null && p.index !== undefined ? ` (page ${p.index})` : "",
      ": ", (p.clusters || []).join(", ") || "no clusters"))))))
    : h("p", { class: "note" }, "No decision yet."));
  const scores = data.scores || {};
  const aggregated = scores.aggregated || [];
  const prioritizers = scores.prioritizers || [];
  parts.push(h("h2", {}, "Scores"));
  parts.push(aggregated.length ? h("table", { "data-testid": "scores" },
    h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Cluster"), h("th", { scope: "col" }, "Total"),
      prioritizers.map((p) => h("th", { scope: "col" }, `${p.name} (weight ${p.weight})`)))),
    h("tbody", {}, aggregated.slice(0, 200).map((s) => h("tr", {}, h("td", {}, s.clusterName), h("td", {}, String(s.score)),
      prioritizers.map((p) => h("td", {}, String((p.scores || {})[s.clusterName] ?? "-")))))))
    : h("p", { class: "note" }, "No cluster passed the filters."));
  if (aggregated.length > 200) parts.push(h("p", { class: "note" }, `Showing the 200 highest of ${aggregated.length}.`));
  if (data.spread && data.spread.terms && data.spread.terms.length) {
    parts.push(h("h2", {}, "Spread"), data.spread.terms.map((t) => h("div", {},
      h("h3", {}, `${t.topologyKeyType} ${t.topologyKey}: maxSkew ${t.maxSkew}, ${t.whenUnsatisfiable}` + (t.heldBack ? `, ${t.heldBack} held back` : "") +
        (t.withoutKey ? `, ${t.withoutKey} without the key` : "")),
      h("table", { "data-testid": "spread" }, h("thead", {}, h("tr", {}, ["Topology", "Candidates", "Selected"].map((x) => h("th", { scope: "col" }, x)))),
        h("tbody", {}, (t.topologies || []).map((top) => h("tr", {}, h("td", {}, (top.values || []).join(" / ")), h("td", {}, String(top.candidates)), h("td", {}, String(top.selected)))))))));
  }
  const missing = data.notSelected || [];
  parts.push(h("h2", {}, `Not selected (${data.notSelectedTotal})`));
  parts.push(missing.length ? h("table", { "data-testid": "not-selected" },
    h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Cluster"), h("th", { scope: "col" }, "Stage"), h("th", { scope: "col" }, "Why"))),
    h("tbody", {}, missing.map((m) => h("tr", { "data-cluster": m.name }, h("td", {}, m.name), h("td", {}, STAGES[m.stage] || m.stage), h("td", {}, m.reason)))))
    : h("p", { class: "note" }, "Every known cluster is selected."));
  if (data.notSelectedTotal > missing.length) parts.push(h("p", { class: "note" }, `Showing ${missing.length} of ${data.notSelectedTotal}.`));
  return parts;
}

// -- the fleet ------------------------------------------------------------------------------------
function drawFleet(data) {
  const search = h("input", { type: "search", id: "fleet-query", "data-key": "fleet-query", value: state.fleetQuery, placeholder: "name or key=value" });
  const form = h("div", { class: "filters", role: "search" }, h("label", { for: "fleet-query" }, "Find clusters ", search),
    h("button", { type: "button", "data-key": "fleet-go", onclick: () => { state.fleetQuery = search.value; state.fleetPage = 0; state.shown = ""; refresh(); } }, "Find"));
  search.addEventListener("keydown", (e) => { if (e.key === "Enter") { state.fleetQuery = search.value; state.fleetPage = 0; state.shown = ""; refresh(); } });
  const clusters = data.clusters || [];
  const avail = (a) => {
    const text = typeof a === "object" && a ? a.status : a;
    const symbol = text === "True" ? "✓ Available" : text === "False" ? "✗ Unavailable" : "? Unknown";
    const why = typeof a === "object" && a ? [a.reason, a.message].filter(Boolean).join(": ") : "";
    return h("span", { class: "badge av-" + text, title: why }, symbol);
  };
  const pager = h("div", { class: "filters" },
    h("button", { type: "button", "data-key": "fleet-prev", disabled: (data.page || 0) <= 0, onclick: () => { state.fleetPage -= 1; state.shown = ""; refresh(); } }, "Previous"),
    ` page ${(data.page || 0) + 1} of ${Math.max(data.pages || 1, 1)} (${data.matched ?? clusters.length} of ${data.total ?? clusters.length} clusters) `,
    h("button", { type: "button", "data-key": "fleet-next", disabled: (data.page || 0) + 1 >= (data.pages || 1), onclick: () => { state.fleetPage += 1; state.shown = ""; refresh(); } }, "Next"));
  return [h("h1", {}, "Fleet"), form, pager,
    h("table", { "data-testid": "fleet" },
      h("thead", {}, h("tr", {}, ["Cluster", "Availability", "Labels", "Claims", "Taints", "Rollouts"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, clusters.map((c) => h("tr", { "data-cluster": c.name }, h("td", {}, c.name), h("td", {}, avail(c.available)),
        h("td", {}, h("code", {}, kv(c.labels))), h("td", { class: "claims" }, (c.claims || []).map((x) => `${x.name}=${x.value}`).join(", ") || "-"),
        h("td", {}, (c.taints || []).map((t) => `${t.key}${t.value ? "=" + t.value : ""}:${t.effect}`).join(", ") || "-"),
        h("td", {}, (c.rollouts || []).length ? (c.rollouts || []).map((r, i) => [i ? ", " : "", link(rolloutHref(r), (r.namespace ? r.namespace + "/" : "") + r.name)]) : "-"))))),
  ];
}

// -- live -----------------------------------------------------------------------------------------
function follow() {
  const live = document.getElementById("live");
  const source = new EventSource("/api/stream");
  source.addEventListener("hello", () => { live.textContent = "● live"; live.className = "live on"; refresh(); });
  source.addEventListener("change", () => { live.textContent = "● live"; live.className = "live on"; refresh(); });
  source.onerror = () => { live.textContent = "○ reconnecting…"; live.className = "live off"; };
}

window.addEventListener("hashchange", () => {
  state.shown = "";
  state.expand.clear();
  refresh();
});
document.addEventListener("DOMContentLoaded", () => {
  follow();
  refresh();
  // Timing (minSuccessTime, progressDeadline) moves without a watch event.
  setInterval(refresh, 5000);
});
