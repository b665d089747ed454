// The tenure status page: polls /status (and, per partition group, one
// page of /status/partitions) and redraws; lease bars count down between
// polls. No dependencies, no network beyond this instance.
"use strict";

const $ = (id) => document.getElementById(id);
const PAGE = 100; // rows per page of a partition table
let fetchedAt = 0; // performance.now() of the last /status
let drawnAt = 0; // performance.now() when the data being drawn was fetched
let gauges = []; // lease cells that tick() redraws
let pollMs = 500;
let failures = 0;
let instance = "";
let lastStatus = null;
const lastToken = new Map(); // key -> token shown, to flash changes
const groups = new Map(); // group -> its block: elements and table query
// window.tenureRedraw: how long redraws take (DOM built and laid out).
const redraws = { count: 0, last: 0, max: 0, recent: [] };
window.tenureRedraw = redraws;

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

const num = (n) => n.toLocaleString("en-US");

function fmtLeft(ms) {
  if (ms <= 0) return "0.0 s";
  if (ms < 60000) return (ms / 1000).toFixed(1) + " s";
  const s = Math.round(ms / 1000);
  return Math.floor(s / 60) + " min" + (s % 60 ? " " + (s % 60) + " s" : "");
}

function fmtTime(iso) {
  const d = new Date(iso);
  const p = (n, w) => String(n).padStart(w || 2, "0");
  return p(d.getHours()) + ":" + p(d.getMinutes()) + ":" + p(d.getSeconds()) + "." + p(d.getMilliseconds(), 3);
}

// timed runs draw and records how long it took, layout included.
function timed(draw) {
  const t0 = performance.now();
  draw();
  void document.body.offsetHeight; // lay the page out inside the measure
  const d = performance.now() - t0;
  redraws.count++;
  redraws.last = d;
  redraws.max = Math.max(redraws.max, d);
  redraws.recent = [...redraws.recent.slice(-19), Math.round(d * 10) / 10];
}

function renderHeader(s) {
  instance = s.instance || "";
  $("instance").textContent = instance;
  const role = $("role");
  role.textContent = s.role;
  role.className = "role " + s.role;
  $("scope").textContent = s.prefix !== undefined && s.instance === undefined ? (s.prefix ? "under " + s.prefix : "· every key") : "";
  $("poll").textContent = s.poll_ms + " ms";
  const err = $("error");
  err.hidden = !s.error;
  err.textContent = s.error ? "coordinator: " + s.error : "";
}

// leaseCell returns the cell of a lease (l: the lease fields of /status)
// and registers it with tick, which draws the bar against the TTL and says
// "not renewing" once the last renewal is older than not_renewing_after_ms.
function leaseCell(tr, l) {
  const fill = el("div");
  const text = el("span", { class: "lefttext" });
  const stale = el("span", { class: "stale", hidden: true }, "not renewing");
  const bar = el("div", { class: "bar" }, fill);
  const td = el("td", { class: "lease" }, bar, el("div", { class: "left" }, text, stale));
  gauges.push({ tr, bar, fill, text, stale, at: drawnAt, left: l.ttl_left_ms, ttl: l.ttl_ms, since: l.since_renewal_ms, after: l.not_renewing_after_ms });
  if (l.ttl_ms !== undefined) tr.dataset.ttlMs = String(l.ttl_ms);
  return td;
}

function drawGauge(g, now) {
  const elapsed = now - g.at;
  const known = g.left !== undefined;
  const left = known ? Math.max(g.left - elapsed, 0) : 0;
  const renewing = g.since === undefined ? undefined : g.since + elapsed <= g.after;
  const width = known && g.ttl ? Math.min(100, (100 * left) / g.ttl) : 0;
  g.fill.style.width = width.toFixed(1) + "%";
  g.bar.classList.toggle("low", known && g.ttl > 0 && left < g.ttl / 3);
  g.bar.classList.toggle("dead", renewing === false);
  g.stale.hidden = renewing !== false;
  const of = g.ttl ? " of " + fmtLeft(g.ttl) : "";
  g.text.textContent = known ? fmtLeft(left) + of : g.ttl ? "TTL " + fmtLeft(g.ttl) : "—";
  g.tr.dataset.leftMs = known ? String(Math.round(left)) : "";
  g.tr.dataset.bar = width.toFixed(1);
  g.tr.dataset.renewing = renewing === undefined ? "" : String(renewing);
}

function holderCell(h, mine) {
  return [h.holder, el("span", { class: "inst" }, "#" + (h.instance || "")), ...(mine ? [el("span", { class: "you" }, "this instance")] : [])];
}

function renderKeys(s) {
  const rows = s.keys.map((k) => {
    const tr = el("tr", { class: k.held ? "held" : "free", "data-key": k.key, "data-holder": k.held ? k.holder : "", "data-token": k.held ? String(k.token) : "" });
    tr.append(el("td", { class: "key" }, k.key),
      el("td", { class: "holder" }, ...(k.held ? holderCell(k, k.mine) : ["— free —"])),
      el("td", { class: "num token" }, k.held ? String(k.token) : "–"),
      k.held ? leaseCell(tr, k) : el("td", { class: "lease" }));
    if (lastToken.has(k.key) && lastToken.get(k.key) !== k.token) tr.classList.add("changed");
    lastToken.set(k.key, k.token);
    return tr;
  });
  document.querySelector("#keys tbody").replaceChildren(...rows);
  const held = s.keys.filter((k) => k.held).length;
  const free = s.keys.length - held;
  $("summary").replaceChildren(held + " held", ...(free ? [" · ", el("span", { class: "free" }, free + " free")] : []));
  $("nokeys").hidden = s.keys.length > 0;
}

// partRow is one partition's row: owner, token, lease, and how long it has
// been unowned or since it moved.
function partRow(p) {
  const tr = el("tr", { class: p.held ? "held" : "free", "data-key": p.key, "data-holder": p.held ? p.holder : "", "data-token": p.held ? String(p.token) : "" });
  const owner = p.held ? holderCell(p, p.mine) : ["— unowned " + fmtLeft(p.unowned_ms || 0) + " —"];
  if (p.moved_ms !== undefined) owner.push(el("span", { class: "moved" }, "moved " + fmtLeft(p.moved_ms) + " ago" + (p.from ? " from " + p.from : "")));
  const label = p.partition < 0 || p.name === String(p.partition) ? p.name : p.partition + " · " + p.name; // −1: index not known
  tr.append(el("td", { class: "key" }, label),
    el("td", { class: "holder" }, ...owner),
    el("td", { class: "num token" }, p.held ? String(p.token) : "–"),
    p.held ? leaseCell(tr, p) : el("td", { class: "lease" }));
  if (lastToken.has(p.key) && lastToken.get(p.key) !== p.token) tr.classList.add("changed");
  lastToken.set(p.key, p.token);
  return tr;
}

const partHead = () => el("thead", {}, el("tr", {}, el("th", {}, "partition"), el("th", {}, "owner"), el("th", { class: "num" }, "token"), el("th", { class: "lease" }, "owner's lease left")));

// groupBlock returns the block of group name, made on first use; its
// controls keep their state across redraws.
function groupBlock(name) {
  let b = groups.get(name);
  if (b) return b;
  b = { q: { state: "all", owner: "", name: "", offset: 0 }, page: null, sent: 0, kept: 0 };
  const state = el("select", { class: "state" }, ...["all", "unowned", "moved", "owned", "mine"].map((v) => el("option", { value: v }, v)));
  const owner = el("select", { class: "owner" }, el("option", { value: "" }, "any owner"));
  const search = el("input", { class: "name", type: "search", placeholder: "partition name contains…" });
  const prev = el("button", { class: "prev" }, "‹ previous");
  const next = el("button", { class: "next" }, "next ›");
  const set = (change) => { Object.assign(b.q, change); refreshGroup(name); };
  state.onchange = () => set({ state: state.value, offset: 0 });
  owner.onchange = () => set({ owner: owner.value, offset: 0 });
  let typing;
  search.oninput = () => { clearTimeout(typing); typing = setTimeout(() => set({ name: search.value, offset: 0 }), 200); };
  prev.onclick = () => set({ offset: Math.max(b.q.offset - PAGE, 0) });
  next.onclick = () => set({ offset: b.q.offset + PAGE });
  Object.assign(b, { owner, prev, next, range: el("span", { class: "range muted" }) });
  b.head = el("h3");
  b.stats = el("div", { class: "stats" });
  b.members = el("tbody");
  b.attention = el("tbody");
  b.attnNote = el("p", { class: "muted note" });
  b.all = el("tbody");
  b.root = el("div", { class: "group", "data-group": name }, b.head, b.stats,
    el("table", { class: "members" }, el("thead", {}, el("tr", {}, el("th", {}, "member"), el("th", {}, "partitions owned"), el("th", { class: "lease" }, "lease left of its TTL"))), b.members),
    el("h4", {}, "Unowned and recently moved"), el("table", { class: "parts attention" }, partHead(), b.attention), b.attnNote,
    el("h4", {}, "All partitions"), el("div", { class: "controls" }, state, owner, search, prev, b.range, next),
    el("table", { class: "parts all" }, partHead(), b.all));
  groups.set(name, b);
  return b;
}

function pageURL(name, q) {
  const p = new URLSearchParams({ group: name, state: q.state, owner: q.owner, name: q.name, offset: q.offset, limit: PAGE });
  return "status/partitions?" + p;
}

// fetchPage fetches the page of a group's table that its controls select.
// A response to a request older than the page kept (the controls changed
// while a poll's request was on its way) is dropped.
async function fetchPage(name) {
  const b = groupBlock(name);
  const seq = ++b.sent;
  const r = await fetch(pageURL(name, b.q), { cache: "no-store" });
  if (!r.ok) throw new Error("HTTP " + r.status);
  const page = await r.json();
  if (seq < b.kept) return;
  b.kept = seq;
  b.page = page;
}

// refreshGroup fetches the page of a group's table after its controls
// changed, and redraws that table.
async function refreshGroup(name) {
  try {
    await fetchPage(name);
    drawnAt = performance.now();
    timed(() => {
      renderTable(groups.get(name));
      gauges = gauges.filter((g) => g.tr.isConnected);
      tick();
    });
  } catch (e) {
    failures++;
  }
}

function renderTable(b) {
  const p = b.page;
  if (!p) return;
  b.all.replaceChildren(...p.partitions.map(partRow));
  const first = p.total === 0 ? 0 : p.offset + 1;
  b.range.textContent = "rows " + num(first) + "–" + num(p.offset + p.partitions.length) + " of " + num(p.total);
  b.prev.disabled = p.offset === 0;
  b.next.disabled = p.offset + p.partitions.length >= p.total;
}

function renderGroup(g, rows) {
  const b = groupBlock(g.group);
  b.head.replaceChildren(el("code", {}, g.group));
  const tile = (label, value, cls) => el("div", { class: "tile " + (cls || "") }, el("b", {}, value), el("span", {}, label));
  b.stats.replaceChildren(tile("partitions", num(g.partitions)), tile("owned", num(g.owned)), tile("unowned", num(g.unowned), g.unowned ? "bad" : ""),
    tile("moved in the last " + fmtLeft(g.move_window_ms), num(g.moved), g.moved ? "warn" : ""), tile(g.members === 1 ? "member" : "members", num(g.members)),
    tile("at most each (⌈P/N⌉)", num(g.cap)), tile("imbalance (most / mean)", g.imbalance.toFixed(2), g.imbalance > 1.1 ? "warn" : ""));
  b.members.replaceChildren(...g.by_member.map((m) => {
    const tr = el("tr", { "data-member": m.id, "data-owned": String(m.owned) });
    const share = g.cap ? Math.min(100, (100 * m.owned) / g.cap) : 0;
    tr.append(el("td", { class: "holder" }, ...holderCell(m, m.mine)),
      el("td", { class: "owned" }, el("div", { class: "share" }, el("div", { style: "width:" + share.toFixed(1) + "%" })), el("span", {}, num(m.owned) + " of at most " + num(g.cap))),
      leaseCell(tr, m));
    return tr;
  }));
  const ids = g.by_member.map((m) => m.id);
  if (ids.join("\n") !== b.ownerIDs) {
    b.ownerIDs = ids.join("\n");
    b.owner.replaceChildren(el("option", { value: "" }, "any owner"), ...ids.map((id) => el("option", { value: id }, id)));
    b.owner.value = ids.includes(b.q.owner) ? b.q.owner : "";
  }
  const attn = rows.filter((p) => p.unowned_ms !== undefined || p.moved_ms !== undefined);
  b.attention.replaceChildren(...attn.map(partRow));
  const waiting = g.unowned + g.moved;
  b.attnNote.textContent = waiting === 0 ? "Every partition is owned, and none moved lately." :
    attn.length < waiting ? "The first " + num(attn.length) + " of " + num(waiting) + ": choose unowned or moved below to page through them all." : "";
  renderTable(b);
  return b.root;
}

function renderPartitions(s) {
  const gs = s.groups || [];
  $("nopartitions").hidden = gs.length > 0;
  $("partitions-section").hidden = gs.length === 0 && s.keys.length > 0;
  $("keys-section").hidden = s.keys.length === 0 && gs.length > 0;
  const byGroup = new Map(gs.map((g) => [g.group, []]));
  for (const p of s.partitions || []) byGroup.get(p.group)?.push(p);
  $("partitions").replaceChildren(...gs.map((g) => renderGroup(g, byGroup.get(g.group))));
}

const ends = new Set(["released", "expired", "ended", "deadline", "lost", "fenced"]);

// renderTimeline lists the transitions, newest first, with the time a key
// had no holder drawn between an end and the next acquisition.
function renderTimeline(s) {
  const gapBefore = new Map(); // acquired event -> ms without a holder before it
  const lastEnd = new Map();
  for (const e of [...s.transitions].reverse()) {
    if (ends.has(e.reason)) lastEnd.set(e.key, e);
    else if (e.reason === "acquired" && lastEnd.has(e.key)) {
      const gap = Date.parse(e.at) - Date.parse(lastEnd.get(e.key).at);
      if (gap >= 1) gapBefore.set(e, gap);
      lastEnd.delete(e.key);
    }
  }
  const items = [];
  for (const e of s.transitions) {
    items.push(el("li", { "data-reason": e.reason, "data-holder": e.holder, "data-token": String(e.token), "data-key": e.key, "data-at": e.at },
      el("span", { class: "at", title: e.at }, fmtTime(e.at)),
      el("span", { class: "reason r-" + e.reason }, e.reason),
      el("span", { class: "what" }, el("code", {}, e.key), " · ", el("b", {}, e.holder), " · token " + e.token),
      el("span", { class: "src" }, e.source === "self" ? "this instance" : "observed")));
    const gap = gapBefore.get(e);
    if (gap !== undefined) {
      items.push(el("li", { class: "gap", "data-reason": "gap", "data-key": e.key, "data-gap-ms": String(gap) },
        el("span", { class: "at" }, ""), el("span", { class: "reason r-gap" }, "no holder"),
        el("span", { class: "what" }, el("code", {}, e.key), " · " + fmtLeft(gap) + " without a holder",
          el("span", { class: "gapbar" }, el("i", { style: "width:" + Math.min(100, gap / 100).toFixed(1) + "%" }))),
        el("span", { class: "src" }, "")));
    }
  }
  $("timeline").replaceChildren(...items);
  $("notimeline").hidden = items.length > 0;
}

// tick redraws the lease bars: the time left is what the last poll said,
// minus the time since; so is the time since the last renewal.
function tick() {
  const now = performance.now();
  for (const g of gauges) drawGauge(g, now);
  const age = fetchedAt ? (now - fetchedAt) / 1000 : 0;
  $("updated").textContent = failures > 0 ? "unreachable" : fetchedAt ? "live · " + age.toFixed(1) + " s ago" : "connecting";
  $("conn").className = "conn " + (failures > 0 ? "bad" : fetchedAt ? "ok" : "");
}

// drawAll redraws the page from s, the last /status, and each group's
// last page of rows.
function drawAll(s) {
  lastStatus = s;
  timed(() => {
    gauges = [];
    renderHeader(s);
    renderKeys(s);
    renderPartitions(s);
    renderTimeline(s);
    tick();
  });
}

// again redraws what was drawn last, as a poll does, to measure it.
redraws.again = () => lastStatus && drawAll(lastStatus);

async function poll() {
  try {
    const r = await fetch("status", { cache: "no-store" });
    if (!r.ok) throw new Error("HTTP " + r.status);
    const s = await r.json();
    const at = performance.now();
    await Promise.all((s.groups || []).map((g) => fetchPage(g.group)));
    failures = 0;
    fetchedAt = drawnAt = at;
    pollMs = Math.min(Math.max(s.poll_ms || 500, 200), 2000);
    drawAll(s);
  } catch (e) {
    failures++;
    tick();
  }
  setTimeout(poll, pollMs);
}

setInterval(tick, 100);
poll();
