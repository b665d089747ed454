// The tenure status page: polls /status and renders it; the lease left
// counts down between polls. No dependencies, no network beyond this
// instance.
"use strict";

const $ = (id) => document.getElementById(id);
let state = { keys: [], fetchedAt: 0 };
const maxLease = new Map(); // key@token -> largest lease_left_ms seen: the bar's 100%
const lastToken = new Map(); // key -> token shown, to flash changes
let pollMs = 500;
let failures = 0;

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else if (k.startsWith("data-")) e.setAttribute(k, v);
    else e[k] = v;
  }
  for (const c of children) e.append(c);
  return e;
}

function fmtLeft(ms) {
  if (ms <= 0) return "0.0 s";
  if (ms < 60000) return (ms / 1000).toFixed(1) + " s";
  const s = Math.round(ms / 1000);
  return Math.floor(s / 60) + " min " + (s % 60) + " s";
}

function fmtTime(iso) {
  const d = new Date(iso);
  const p = (n, w) => String(n).padStart(w || 2, "0");
  return p(d.getHours()) + ":" + p(d.getMinutes()) + ":" + p(d.getSeconds()) + "." + p(d.getMilliseconds(), 3);
}

function renderHeader(s) {
  $("instance").textContent = s.instance || "";
  const role = $("role");
  role.textContent = s.role;
  role.className = "role " + s.role;
  $("scope").textContent = s.prefix !== undefined && s.instance === undefined ? (s.prefix ? "under " + s.prefix : "· every key") : "";
  $("poll").textContent = s.poll_ms + " ms";
  const err = $("error");
  err.hidden = !s.error;
  err.textContent = s.error ? "coordinator: " + s.error : "";
}

function renderKeys(s) {
  const body = document.querySelector("#keys tbody");
  const rows = [];
  for (const k of s.keys) {
    const holder = k.held
      ? [k.holder, el("span", { class: "inst" }, "#" + (k.instance || "")), ...(k.mine ? [el("span", { class: "you" }, "this instance")] : [])]
      : ["— free —"];
    const tr = el("tr", { class: k.held ? "held" : "free", "data-key": k.key, "data-holder": k.held ? k.holder : "", "data-token": k.held ? String(k.token) : "" },
      el("td", { class: "key" }, k.key),
      el("td", { class: "holder" }, ...holder),
      el("td", { class: "num token" }, k.held ? String(k.token) : "–"),
      el("td", { class: "lease" }, el("div", { class: "bar" }, el("div")), el("div", { class: "left" })));
    if (lastToken.has(k.key) && lastToken.get(k.key) !== k.token) tr.classList.add("changed");
    lastToken.set(k.key, k.token);
    const id = k.key + "@" + k.token;
    maxLease.set(id, Math.max(maxLease.get(id) || 0, k.lease_left_ms ?? 0));
    rows.push(tr);
  }
  body.replaceChildren(...rows);
  const held = s.keys.filter((k) => k.held).length;
  const free = s.keys.length - held;
  $("summary").replaceChildren(held + " held", ...(free ? [" · ", el("span", { class: "free" }, free + " free")] : []));
  $("nokeys").hidden = s.keys.length > 0;
  tick();
}

// renderPartitions draws one table per partition group: each partition's
// owner, token and lease left (counted down by tick).
function renderPartitions(s) {
  const groups = s.groups || [];
  const parts = s.partitions || [];
  $("nopartitions").hidden = groups.length > 0;
  $("partitions-section").hidden = groups.length === 0 && s.keys.length > 0;
  $("keys-section").hidden = s.keys.length === 0 && groups.length > 0;
  $("partitions").replaceChildren(...groups.map((g) => {
    const rows = parts.filter((p) => p.group === g.group).map((p) => {
      const owner = p.held
        ? [p.holder, el("span", { class: "inst" }, "#" + (p.instance || "")), ...(p.mine ? [el("span", { class: "you" }, "this instance")] : [])]
        : ["— unowned " + fmtLeft(p.unowned_ms || 0) + " —"];
      const tr = el("tr", { class: p.held ? "held" : "free", "data-key": p.key, "data-holder": p.held ? p.holder : "", "data-token": p.held ? String(p.token) : "" },
        el("td", { class: "key" }, p.name === String(p.partition) ? p.name : p.partition + " · " + p.name),
        el("td", { class: "holder" }, ...owner),
        el("td", { class: "num token" }, p.held ? String(p.token) : "–"),
        el("td", { class: "lease" }, el("div", { class: "bar" }, el("div")), el("div", { class: "left" })));
      tr.dataset.left0 = String(p.held ? p.lease_left_ms ?? 0 : -1);
      if (lastToken.has(p.key) && lastToken.get(p.key) !== p.token) tr.classList.add("changed");
      lastToken.set(p.key, p.token);
      const id = p.key + "@" + p.token;
      maxLease.set(id, Math.max(maxLease.get(id) || 0, p.lease_left_ms ?? 0));
      tr.dataset.id = id;
      return tr;
    });
    const summary = g.partitions + " partitions · " + g.members + (g.members === 1 ? " member" : " members") + " · at most " + g.cap + " each · imbalance " +
      g.imbalance.toFixed(2) + " · ";
    return el("div", { class: "group", "data-group": g.group },
      el("h3", {}, el("code", {}, g.group), " ", el("span", { class: "muted" }, summary),
        el("span", { class: g.unowned ? "free" : "" }, g.unowned + " unowned")),
      el("table", { class: "parts" },
        el("thead", {}, el("tr", {}, el("th", {}, "partition"), el("th", {}, "owner"), el("th", { class: "num" }, "token"), el("th", { class: "lease" }, "lease left"))),
        el("tbody", {}, ...rows)));
  }));
}

// leaseCell draws the bar and the time left of one row: left ms of a bar
// whose 100% is full; known is false when the coordinator did not say.
function leaseCell(tr, known, left, full) {
  const bar = tr.querySelector(".bar");
  bar.firstChild.style.width = (known ? Math.min(100, (100 * left) / full) : 0) + "%";
  bar.classList.toggle("low", left < full / 3);
  tr.dataset.leftMs = String(Math.round(left));
}

function renderTimeline(s) {
  const items = s.transitions.map((e) =>
    el("li", { "data-reason": e.reason, "data-holder": e.holder, "data-token": String(e.token) },
      el("span", { class: "at", title: e.at }, fmtTime(e.at)),
      el("span", { class: "reason r-" + e.reason }, e.reason),
      el("span", { class: "what" }, el("code", {}, e.key), " · ", el("b", {}, e.holder), " · token " + e.token),
      el("span", { class: "src" }, e.source === "self" ? "this instance" : "observed")));
  $("timeline").replaceChildren(...items);
  $("notimeline").hidden = items.length > 0;
}

// tick redraws the lease bars: the time left is what the last poll said,
// minus the time since.
function tick() {
  const since = performance.now() - state.fetchedAt;
  const rows = document.querySelectorAll("#keys tbody tr");
  state.keys.forEach((k, i) => {
    const tr = rows[i];
    if (!tr) return;
    const known = k.held && k.lease_left_ms !== undefined;
    const left = known ? Math.max(k.lease_left_ms - since, 0) : 0;
    leaseCell(tr, known, left, maxLease.get(k.key + "@" + k.token) || 1);
    tr.querySelector(".left").textContent = known ? fmtLeft(left) : k.held ? "—" : "";
  });
  for (const tr of document.querySelectorAll("table.parts tbody tr")) {
    const left0 = Number(tr.dataset.left0);
    const left = Math.max(left0 - since, 0);
    leaseCell(tr, left0 >= 0, left, maxLease.get(tr.dataset.id) || 1);
    tr.querySelector(".left").textContent = left0 >= 0 ? fmtLeft(left) : "";
  }
  const conn = $("conn");
  const age = state.fetchedAt ? (performance.now() - state.fetchedAt) / 1000 : 0;
  $("updated").textContent = failures > 0 ? "unreachable" : state.fetchedAt ? "live · " + age.toFixed(1) + " s ago" : "connecting";
  conn.className = "conn " + (failures > 0 ? "bad" : state.fetchedAt ? "ok" : "");
}

async function poll() {
  try {
    const r = await fetch("status", { cache: "no-store" });
    if (!r.ok) throw new Error("HTTP " + r.status);
    const s = await r.json();
    failures = 0;
    state = { keys: s.keys, fetchedAt: performance.now() };
    pollMs = Math.min(Math.max(s.poll_ms || 500, 200), 2000);
    renderHeader(s);
    renderKeys(s);
    renderPartitions(s);
    renderTimeline(s);
  } catch (e) {
    failures++;
    tick();
  }
  setTimeout(poll, pollMs);
}

setInterval(tick, 100);
poll();
