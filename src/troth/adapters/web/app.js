// troth review page: no framework, no build step, no third-party code.
// The token lives in this tab's sessionStorage and travels only in the Authorization
// header; the server refuses cross-site writes and sends no CORS headers. Every memory is
// rendered with textContent, never as HTML.
"use strict";

const KEY = "troth.token";
const PAGE = 50;
// A hit that matched no word of the query and only weakly by meaning is folded away, so
// the list shows what answers the question rather than every memory there is.
const WEAK_VECTOR = 0.35;
const $ = (id) => document.getElementById(id);

let me = null;          // GET /api/me
let view = "inbox";
let allOffset = 0;

function token() { return sessionStorage.getItem(KEY); }

async function request(method, path, body) {
  const headers = { "Authorization": "Bearer " + token(), "Accept": "application/json" };
  const init = { method, headers, credentials: "omit", cache: "no-store" };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  if (response.status === 401) { signOut("Your token is no longer valid; sign in again."); }
  if (!response.ok) {
    const data = await response.json().catch(() => ({}));
    throw new Error(data.message || ("The server answered " + response.status));
  }
  return response;
}

async function api(method, path, body) {
  const response = await request(method, path, body);
  return response.json();
}

function say(text, kind) {
  const status = $("status");
  status.textContent = text;
  status.className = "status " + (kind || "");
}

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) { continue; }
    if (name === "text") { node.textContent = value; } else { node.setAttribute(name, value); }
  }
  for (const child of children) {
    if (child !== null && child !== undefined && child !== false) { node.append(child); }
  }
  return node;
}

function button(label, onClick, cls, attrs) {
  const b = el("button", { type: "button", text: label, ...(attrs || {}) });
  if (cls) { b.className = cls; }
  b.addEventListener("click", onClick);
  return b;
}

// -- plain words ------------------------------------------------------------------------

const STATUS_WORDS = {
  proposed: "Waiting for you", active: "In use", rejected: "Rejected", expired: "Expired",
  forgotten: "Forgotten", no_store: "Not kept",
};
const CHANNEL_WORDS = {
  user: "you said it", synthesis: "the agent inferred it", tool: "the agent read it in a tool",
  internal: "the agent's own note",
};
const EVENT_WORDS = {
  propose: "written", approve: "approved", reject: "rejected", edit: "edited", forget: "forgotten",
  redact: "text erased", export: "exported", expire: "expired",
};
const KIND_WORDS = { fact: "fact", preference: "preference", instruction: "instruction", context: "background" };
const SCOPE_WORDS = {
  "memory:read": "read", "memory:write": "propose", "memory.sensitive:read": "see sensitive",
  "export:read": "export", "review:write": "decide",
};

function name(principal) {
  if (!principal) { return ""; }
  if (me && principal === me.owner) { return "you"; }
  const [kind, rest] = [principal.slice(0, principal.indexOf(":")), principal.slice(principal.indexOf(":") + 1)];
  return kind === "agent" ? `${rest} (agent)` : kind === "human" ? rest : `${rest} (${kind})`;
}

// Who wrote the text at its origin comes first: an edit keeps its origin's writer and
// channel, and says who made this version beside it (docs/api.md, "Trust model").
function who(memory) {
  const origin = memory.origin || memory.actor;
  let by = name(origin);
  if (memory.on_behalf_of && memory.on_behalf_of !== origin) {
    by = `${by}, for ${name(memory.on_behalf_of)}`;
  }
  if (memory.actor && memory.actor !== origin) {
    by = `${by}; this version by ${name(memory.actor)}`;
  }
  return by;
}

function endorsedWords(memory) {
  const people = (memory.endorsed_by || []).filter((p) => p !== (memory.origin || memory.actor));
  if (!people.length) { return null; }
  return `${people.map(name).join(", ")} — vouching for it does not make it count as your own words`;
}

function statusWord(memory) {
  if (memory.redacted) { return "Text erased"; }
  if (memory.superseded_by) { return "Replaced by a newer version"; }
  return STATUS_WORDS[memory.status] || memory.status;
}

const RELATIVE = new Intl.RelativeTimeFormat("en", { numeric: "auto" });
const EXACT = new Intl.DateTimeFormat("en", { dateStyle: "medium", timeStyle: "short" });

function when(iso) {
  const at = new Date(iso);
  const seconds = (at.getTime() - Date.now()) / 1000;
  const steps = [[60, "second"], [3600, "minute"], [86400, "hour"], [604800, "day"], [2629800, "week"], [31557600, "month"]];
  let text = RELATIVE.format(Math.round(seconds / 31557600), "year");
  let unit = 1;
  for (const [limit, label] of steps) {
    if (Math.abs(seconds) < limit) { text = RELATIVE.format(Math.round(seconds / unit), label); break; }
    unit = limit;
  }
  if (Math.abs(seconds) < 45) { text = "just now"; }
  return el("time", { datetime: iso, title: EXACT.format(at) + " (" + iso + ")", text });
}

function short(hash) { return hash ? hash.slice(0, 12) + "…" : ""; }

function snippet(text, size) { return text.length > size ? text.slice(0, size - 1) + "…" : text; }

function link(id, label) {
  return el("a", { href: "#memory/" + encodeURIComponent(id), class: "id-link", text: label || id });
}

// -- the confirmation dialog ------------------------------------------------------------

// reason: "required", "optional" or "none". Resolves to {reason} or null when cancelled.
function confirmWith({ title, text, items, reason, ok }) {
  const dialog = $("confirm");
  $("confirm-title").textContent = title;
  $("confirm-text").textContent = text;
  $("confirm-items").replaceChildren(...(items || []).map((t) => el("li", { text: t })));
  $("confirm-items").hidden = !(items && items.length);
  $("confirm-reason-row").hidden = reason === "none";
  $("confirm-reason").required = reason === "required";
  $("confirm-reason-label").textContent = reason === "required"
    ? "Reason (required, kept in the history)" : "Reason (optional, kept in the history)";
  $("confirm-reason").value = "";
  $("confirm-ok").textContent = ok || "Confirm";
  dialog.showModal();
  return new Promise((resolve) => {
    const done = (value) => {
      $("confirm-form").removeEventListener("submit", onSubmit);
      $("confirm-cancel").removeEventListener("click", onCancel);
      dialog.removeEventListener("cancel", onCancel);
      resolve(value);
    };
    const onSubmit = () => done({ reason: $("confirm-reason").value.trim() || null });
    const onCancel = (event) => { if (event) { event.preventDefault(); } dialog.close(); done(null); };
    $("confirm-form").addEventListener("submit", onSubmit);
    $("confirm-cancel").addEventListener("click", onCancel);
    dialog.addEventListener("cancel", onCancel);
  });
}

async function act(label, work) {
  // Where the person was: after the list redraws, focus goes to the card now in that
  // place (or the view's heading), never back to the top of the page.
  const card = document.activeElement && document.activeElement.closest("li.memory");
  const list = card && card.parentElement;
  const place = list ? [...list.children].indexOf(card) : -1;
  // The status is said once the view shows the outcome, so what it says is what one sees.
  let outcome = [label, "ok"];
  try {
    await work();
  } catch (error) {
    outcome = [error.message, "error"];
  }
  await refresh();
  say(...outcome);
  if (list && list.isConnected) {
    const next = list.children[Math.min(place, list.children.length - 1)];
    const target = next && next.querySelector("button");
    if (target) { target.focus(); return; }
  }
  const heading = document.querySelector(`#view-${view} h1`);
  if (heading && !document.activeElement.closest("dialog") && document.activeElement === document.body) { heading.focus(); }
}

const path = (id, verb) => `/api/memories/${encodeURIComponent(id)}/${verb}`;

// -- what a person decides ----------------------------------------------------------------

function approve(memory) {
  return act("Approved: agents can now recall it.", () => api("POST", path(memory.id, "approve"), {}));
}

// The three decisions that take something away, each explained in one sentence and each
// asking for a reason (kept in the audit trail: a reject's note, a forget's or redact's reason).
const TAKING = {
  reject: {
    title: "Reject this proposal?", ok: "Reject", done: "Rejected.", field: "note", reason: "optional",
    text: "It is never used; the ledger keeps that the agent proposed it and that you said no.",
  },
  forget: {
    title: "Forget this memory?", ok: "Forget", done: "Forgotten.", field: "reason", reason: "required",
    text: "Agents stop recalling it at once; its text stays in your ledger until you erase it.",
  },
  redact: {
    title: "Erase this memory's text for good?", ok: "Erase the text", done: "Text erased.", field: "reason", reason: "required",
    text: "The words are removed from every copy the server keeps; the chain keeps only that something was here. This cannot be undone.",
  },
};

async function take(verb, memory) {
  const how = TAKING[verb];
  const answer = await confirmWith({ ...how, items: [memory.content] });
  if (answer) {
    await act(how.done, () => api("POST", path(memory.id, verb), { [how.field]: answer.reason }));
  }
}

function editor(item, memory) {
  const actions = item.querySelector(".actions");
  const area = el("textarea", { "aria-label": "Your version of this memory", rows: "3", maxlength: "2000" });
  area.value = memory.content;
  const close = () => { box.remove(); actions.hidden = false; actions.querySelector(".edit").focus(); };
  const save = button("Save and approve", () => act("Your version is saved and approved.", async () => {
    const written = await api("POST", path(memory.id, "edit"), { content: area.value });
    // A sensitive topic keeps even a person's edit waiting: approve it in the same step.
    if (written.status === "proposed") { await api("POST", path(written.id, "approve"), {}); }
  }), "primary");
  const box = el("div", { class: "editor" },
    el("p", { class: "hint", text: "Your version replaces the agent's; the agent's stays in the history." }),
    area, el("div", { class: "actions" }, save, button("Cancel", close)));
  actions.hidden = true;
  item.insertBefore(box, actions);
  area.focus();
}

async function decideSelected(decision) {
  const picked = [...document.querySelectorAll("#inbox-list input.pick:checked")];
  const memories = picked.map((box) => box.closest("li").memory);
  if (!memories.length) { return; }
  const verb = decision === "approve" ? "Approve" : "Reject";
  const answer = await confirmWith({
    title: `${verb} ${memories.length} ${memories.length === 1 ? "proposal" : "proposals"}?`,
    text: decision === "approve"
      ? "Agents can recall each of these once approved."
      : "None of these will be used; the ledger keeps that you said no.",
    items: memories.map((m) => snippet(m.content, 120)), reason: "optional",
    ok: `${verb} ${memories.length}`,
  });
  if (!answer) { return; }
  await act(`${decision === "approve" ? "Approved" : "Rejected"} ${memories.length}.`, async () => {
    const failed = [];
    for (const memory of memories) {
      try {
        await api("POST", path(memory.id, decision), { note: answer.reason });
      } catch (error) {
        failed.push(error.message);
      }
    }
    if (failed.length) { throw new Error(`${failed.length} could not be decided: ${failed[0]}`); }
  });
}

function updateBulk() {
  const boxes = [...document.querySelectorAll("#inbox-list input.pick")];
  const n = boxes.filter((b) => b.checked).length;
  $("bulk-approve").disabled = $("bulk-reject").disabled = n === 0;
  $("bulk-approve").textContent = n ? `Approve selected (${n})` : "Approve selected";
  $("bulk-reject").textContent = n ? `Reject selected (${n})` : "Reject selected";
  $("select-all").checked = boxes.length > 0 && n === boxes.length;
  $("select-all").indeterminate = n > 0 && n < boxes.length;
}

// -- cards --------------------------------------------------------------------------------

function warnings(memory) {
  const out = el("div", { class: "warnings" });
  if (memory.flagged || (memory.tags || []).includes("injection-flagged")) {
    out.append(el("p", { class: "warn danger-note" },
      el("strong", { text: "Reads like an instruction to an assistant. " }),
      memory.status === "proposed"
        ? "Agents that recall it could be steered by it. Reject it unless you wrote it yourself."
        : "Agents are told it is data, and it never justifies an action, whoever approved it."));
  }
  if (memory.sensitivity === "sensitive") {
    out.append(el("p", { class: "warn" },
      el("strong", { text: "Sensitive" + (memory.topic !== "general" ? ` (${memory.topic}). ` : ". ") }),
      "Only tokens allowed to see sensitive memories will ever read it."));
  }
  for (const relation of memory.relations || []) {
    if (relation.rel !== "contradicts") { continue; }
    const slot = el("div", { class: "beside" }, el("p", { class: "hint", text: "Loading what you have…" }));
    out.append(el("div", { class: "warn" },
      el("strong", { text: "Contradicts a memory you have." }), slot));
    api("GET", `/api/memories/${encodeURIComponent(relation.target)}`).then((other) => {
      slot.replaceChildren(
        el("div", {}, el("p", { class: "label", text: "This proposal" }), el("p", { text: memory.content })),
        el("div", {}, el("p", { class: "label", text: "What you have" }), el("p", { text: other.content }),
          link(other.id, "Open it")));
    }).catch(() => slot.replaceChildren(el("p", { text: "The memory it contradicts: " }, link(relation.target))));
  }
  return out.childElementCount ? out : null;
}

function facts(memory, hit) {
  const list = el("dl", { class: "facts" });
  const add = (label, value) => { if (value) { list.append(el("div", {}, el("dt", { text: label }), el("dd", {}, value))); } };
  add("Who", who(memory));
  add("Why", reasonWords(memory.reason));
  add("How", CHANNEL_WORDS[memory.channel] || memory.channel);
  add("Vouched for by", endorsedWords(memory));
  add("When", when(memory.created_at));
  add("Kind", KIND_WORDS[memory.kind] || memory.kind);
  if (memory.tags && memory.tags.filter((t) => t !== "injection-flagged").length) {
    add("Tags", memory.tags.filter((t) => t !== "injection-flagged").join(", "));
  }
  if (hit) { add("Match", matchWords(hit)); }
  return list;
}

function reasonWords(reason) {
  if (!reason) { return null; }
  const edit = /^edit of (m_[0-9a-z]+)$/.exec(reason);
  if (edit) { return el("span", {}, "an edit of ", link(edit[1], "the earlier version")); }
  return `“${reason}”`;
}

function matchWords(hit) {
  const why = hit.why || {};
  const parts = [`score ${hit.score.toFixed(2)}`];
  if (why.lexical_rank) { parts.push(`shares words with your search (#${why.lexical_rank})`); }
  if (why.vector_rank) { parts.push(`close in meaning (#${why.vector_rank}${why.vector_score !== null && why.vector_score !== undefined ? ", " + why.vector_score.toFixed(2) : ""})`); }
  for (const [factor, value] of Object.entries(why.adjustments || {})) {
    const change = Math.round((value - 1) * 100);
    parts.push(`${factor.replace(/_/g, " ")} ${change >= 0 ? "+" : ""}${change}%`);
  }
  return parts.join(" · ");
}

function card(memory, options) {
  const opts = options || {};
  const proposal = memory.status === "proposed";
  const item = el("li", {
    class: "memory" + (memory.flagged ? " flagged" : "") + (proposal ? "" : " state-" + memory.status),
    "data-id": memory.id, "data-status": memory.status,
  });
  item.memory = memory;
  const head = el("div", { class: "head" });
  if (proposal && opts.pick) {
    const box = el("input", { type: "checkbox", class: "pick", "aria-label": "Select: " + snippet(memory.content, 60) });
    box.addEventListener("change", updateBulk);
    head.append(box);
  }
  if (!proposal) { head.append(el("span", { class: "badge badge-" + memory.status, text: statusWord(memory) })); }
  item.append(head);
  const warn = warnings(memory);
  if (warn) { item.append(warn); }
  if (memory.redacted) {
    item.append(el("p", { class: "content erased", text: "The text was erased; the ledger keeps only that something was here." }));
  } else if (!memory.content && memory.superseded_by) {
    item.append(el("p", { class: "content erased", text: "An earlier version; its text no longer shows anywhere." }));
  } else if (!memory.content) {
    item.append(el("p", { class: "content erased", text: "Forgotten: its text no longer shows anywhere and agents cannot recall it." }));
  } else {
    item.append(el("p", { class: "content", text: memory.content }));
  }
  if (memory.superseded_by) {
    item.append(el("p", { class: "hint" }, "Replaced by ", link(memory.superseded_by, "the newer version"), "."));
  }
  item.append(facts(memory, opts.hit));
  const actions = el("div", { class: "actions" });
  if (proposal) {
    actions.append(
      // A flagged proposal does not invite approval: its Approve is the plain button.
      button("Approve", () => approve(memory), memory.flagged ? "approve" : "primary approve"),
      button("Edit, then approve", () => editor(item, memory), "edit"),
      button("Reject…", () => take("reject", memory), "reject"),
    );
  } else if (memory.status === "active" || memory.status === "expired") {
    actions.append(button("Forget…", () => take("forget", memory), "danger forget"));
  }
  const toggle = button("History and details", () => details(item, memory, toggle), "details",
    { "aria-expanded": "false" });
  actions.append(toggle);
  item.append(actions);
  if (opts.open) { details(item, memory, toggle); }
  return item;
}

function fill(list, memories, empty, options) {
  list.replaceChildren(...memories.map((m) => card(m, options)));
  if (!memories.length) { list.append(el("li", { class: "empty", text: empty })); }
}

// -- a memory's details and history, inside its card ----------------------------------------

async function details(item, memory, toggle) {
  const open = item.querySelector(".detail");
  if (open) { open.remove(); toggle.setAttribute("aria-expanded", "false"); return; }
  toggle.setAttribute("aria-expanded", "true");
  const region = el("section", { class: "detail", "aria-label": "History and details" },
    el("p", { class: "hint", text: "Loading…" }));
  item.append(region);
  try {
    const [full, chain] = await Promise.all([
      api("GET", `/api/memories/${encodeURIComponent(memory.id)}`),
      api("GET", path(memory.id, "events")),
    ]);
    region.replaceChildren(...detailParts(full, chain.events));
  } catch (error) {
    region.replaceChildren(el("p", { class: "error", text: error.message }));
  }
}

function detailParts(memory, events) {
  const fields = el("dl", { class: "fields" });
  const add = (label, value) => { if (value) { fields.append(el("div", {}, el("dt", { text: label }), el("dd", {}, value))); } };
  add("Status", statusWord(memory));
  add("Topic", memory.topic);
  add("Sensitivity", memory.sensitivity === "sensitive" ? "sensitive" : null);
  add("Channel", `${memory.channel} — ${CHANNEL_WORDS[memory.channel] || ""}`);
  add("Written by", name(memory.origin || memory.actor));
  add("Flag", memory.flagged ? "reads like an instruction to an assistant: it never justifies an action" : null);
  add("Created", EXACT.format(new Date(memory.created_at)));
  add("Changed", memory.updated_at !== memory.created_at ? EXACT.format(new Date(memory.updated_at)) : null);
  add("Replaces", memory.supersedes ? link(memory.supersedes, "the version it replaced") : null);
  add("Replaced by", memory.superseded_by ? link(memory.superseded_by, "the newer version") : null);
  if (memory.relations && memory.relations.length) {
    const rel = el("ul", { class: "plain" });
    for (const r of memory.relations) { rel.append(el("li", {}, `${r.rel.replace(/_/g, " ")} `, link(r.target))); }
    add("Linked", rel);
  }
  add("Id", el("code", { text: memory.id }));
  // Slot for the integrity work: a proof of inclusion in the latest signed checkpoint.
  if (memory.inclusion) { add("Checkpoint", memory.inclusion.ok ? "included in the latest signed checkpoint" : "NOT in the latest checkpoint"); }

  const byTime = new Map(events.map((e) => [e.at, e]));
  const history = el("ol", { class: "history" });
  const used = new Set();
  for (const step of memory.audit) {
    const event = byTime.get(step.at);
    if (event) { used.add(event.seq); }
    history.append(historyItem(step.action, step.actor, step.at, step.note, event));
  }
  for (const event of events) {
    if (!used.has(event.seq)) { history.append(historyItem(event.event, event.actor, event.at, null, event)); }
  }
  const parts = [fields, el("h3", { text: "History" }), history];
  if (memory.status !== "proposed" && !memory.redacted) {
    parts.push(el("div", { class: "erase" },
      el("p", { class: "hint", text: "Erasing removes these words from every copy the server keeps, for good." }),
      button("Erase the text…", () => take("redact", memory), "danger redact")));
  }
  return parts;
}

function historyItem(action, actor, at, note, event) {
  const item = el("li", {},
    el("span", { class: "what", text: `${EVENT_WORDS[action] || action.replace(/_/g, " ")} by ${name(actor) || "the system"} ` }), when(at));
  if (note) {
    const match = /^by (m_[0-9a-z]+)$/.exec(note);
    item.append(match ? el("span", {}, " — by ", link(match[1])) : el("span", { text: " — " + note }));
  }
  if (event) {
    item.append(el("span", { class: "chain" },
      el("span", { text: `entry #${event.seq} · ` }),
      el("code", { title: event.hash, text: short(event.hash) })));
  }
  return item;
}

// -- filters ----------------------------------------------------------------------------

function buildFilters(prefix, withStatus) {
  const box = $(prefix + "-filters");
  const field = (id, label, control) => el("div", { class: "field" }, el("label", { for: id, text: label }), control);
  const select = (id, options) => el("select", { id }, ...options.map(([v, t]) => el("option", { value: v, text: t })));
  box.append(field(`${prefix}-kind`, "Kind", select(`${prefix}-kind`,
    [["", "any"], ...Object.entries(KIND_WORDS)])));
  if (withStatus) {
    box.append(field(`${prefix}-status`, "Status", select(`${prefix}-status`,
      [["", "any"], ...Object.entries(STATUS_WORDS)])));
  }
  box.append(
    field(`${prefix}-tag`, "Tag", el("input", { id: `${prefix}-tag`, maxlength: "100" })),
    field(`${prefix}-agent`, "Written by", el("input", { id: `${prefix}-agent`, list: "agents", maxlength: "140", placeholder: "agent:NAME" })),
    field(`${prefix}-since`, "From", el("input", { id: `${prefix}-since`, type: "date" })),
    field(`${prefix}-until`, "To", el("input", { id: `${prefix}-until`, type: "date" })),
  );
}

function filterParams(prefix) {
  const params = new URLSearchParams();
  for (const [key, id] of [["kind", "kind"], ["status", "status"], ["tag", "tag"], ["agent", "agent"], ["since", "since"], ["until", "until"]]) {
    const input = $(`${prefix}-${id}`);
    if (input && input.value.trim()) { params.set(key, input.value.trim()); }
  }
  return params;
}

// -- views ------------------------------------------------------------------------------

async function refresh() {
  try {
    if (view === "inbox") {
      await inbox();
    } else if (view === "all") {
      await listAll();
    } else if (view === "search" && $("search-q").value.trim()) {
      await search();
    } else if (view === "ledger") {
      await ledger();
    } else if (view === "memory") {
      await oneMemory();
    }
    if (view !== "inbox") { await inboxCount(); }
  } catch (error) {
    say(error.message, "error");
  }
}

async function inboxCount() {
  const page = await api("GET", "/api/memories?status=proposed&limit=1");
  $("nav-count").textContent = page.total ? `(${page.total})` : "";
  return page.total;
}

async function inbox() {
  const page = await api("GET", "/api/memories?status=proposed&limit=200");
  $("inbox-count").textContent = page.total ? `(${page.total})` : "";
  $("nav-count").textContent = page.total ? `(${page.total})` : "";
  fill($("inbox-list"), page.memories, "Nothing waits for you.", { pick: true });
  $("bulk").hidden = page.memories.length < 2;
  if (page.total > page.memories.length) {
    $("inbox-list").append(el("li", { class: "empty", text: `${page.total - page.memories.length} more wait; decide these first.` }));
  }
  updateBulk();
}

async function search() {
  const q = $("search-q").value.trim();
  const params = filterParams("search");
  params.set("q", q);
  params.set("limit", "50");
  const found = await api("GET", "/api/search?" + params);
  const weak = (h) => !h.why.lexical_rank && !(h.why.vector_score >= WEAK_VECTOR);
  const strong = found.hits.filter((h) => !weak(h));
  const faint = found.hits.filter(weak);
  const render = (list, hits) => {
    list.replaceChildren(...hits.map((h) => card(h.memory, { hit: h })));
  };
  render($("search-list"), strong);
  if (!strong.length) { $("search-list").append(el("li", { class: "empty", text: "Nothing answers that." })); }
  render($("search-weak-list"), faint);
  $("search-weak").hidden = !faint.length;
  $("search-weak-summary").textContent = `${faint.length} weaker ${faint.length === 1 ? "match" : "matches"}`;
  $("search-summary").textContent = `${strong.length} ${strong.length === 1 ? "memory answers" : "memories answer"} “${q}”, best first.`;
}

async function listAll() {
  const params = filterParams("all");
  params.set("limit", String(PAGE));
  params.set("offset", String(allOffset));
  const page = await api("GET", "/api/memories?" + params);
  fill($("all-list"), page.memories, "No memories match.");
  const first = page.total ? page.offset + 1 : 0;
  $("all-summary").textContent = `${first} to ${page.offset + page.memories.length} of ${page.total}, newest first.`;
  $("all-prev").disabled = page.offset === 0;
  $("all-next").disabled = page.offset + page.memories.length >= page.total;
}

async function oneMemory() {
  const id = decodeURIComponent(location.hash.slice("#memory/".length));
  const memory = await api("GET", `/api/memories/${encodeURIComponent(id)}`);
  fill($("memory-list"), [memory], "", { open: true });
}

async function ledger() {
  const [status, counts] = await Promise.all([api("GET", "/api/verify"), api("GET", "/api/counts")]);
  const health = $("health");
  health.replaceChildren();
  const row = (label, value, cls) => health.append(el("div", {}, el("dt", { text: label }), el("dd", { class: cls }, value)));
  row("Chain", status.ok ? "Verifies: every entry links to the one before." : `Broken at entry #${status.broken_at}: ${status.reason}`, status.ok ? "ok" : "bad");
  row("Entries", String(status.length));
  row("Latest entry", status.head ? el("code", { title: status.head, text: short(status.head) }) : "none yet");
  row("Your memories", status.projection_ok ? "match the chain (rebuilt from it, nothing differs)." : "differ from the chain: run `troth verify`.", status.projection_ok ? "ok" : "bad");
  const checkpoint = status.checkpoint;
  $("checkpoint").hidden = !checkpoint;
  if (checkpoint) {
    const witnesses = (checkpoint.witnesses || []).map((w) => w.name || w.id || String(w)).join(", ");
    $("checkpoint").replaceChildren(el("h3", { text: "Last signed checkpoint" }),
      el("p", {}, `Entry #${checkpoint.length ?? checkpoint.seq ?? "?"}, `, when(checkpoint.at || checkpoint.created_at || new Date().toISOString()),
        witnesses ? `; witnessed by ${witnesses}` : "; no witness yet"));
  }
  $("counts").replaceChildren(...Object.entries(counts.by_status).filter(([, n]) => n).map(([s, n]) =>
    el("li", {}, el("span", { class: "n", text: String(n) }), " " + (STATUS_WORDS[s] || s).toLowerCase())));
  if (!counts.total) { $("counts").append(el("li", { text: "none yet" })); }
  await recent(status.length);
  await tokens();
}

async function recent(length) {
  const start = Math.max(0, length - 10);
  const data = await api("GET", `/api/audit?start=${start}&limit=10`);
  $("recent").replaceChildren(...data.events.reverse().map((e) => el("li", {},
    el("span", { class: "what", text: `${EVENT_WORDS[e.event] || e.event.replace(/_/g, " ")} by ${name(e.actor) || "the system"} ` }),
    when(e.at),
    e.memory ? el("span", {}, " · ", link(e.memory, "the memory")) : null,
    el("span", { class: "chain" }, `entry #${e.seq} · `, el("code", { title: e.hash, text: short(e.hash) })))));
  if (!data.events.length) { $("recent").append(el("li", { text: "No entries yet." })); }
}

async function tokens() {
  const list = $("tokens");
  if (!me.scopes.includes("review:write")) {
    list.replaceChildren(el("li", { class: "empty", text: "This token may not see who holds tokens (it lacks review:write)." }));
    return;
  }
  const data = await api("GET", "/api/tokens");
  const agents = data.tokens.filter((t) => t.principal !== me.owner);
  $("agents").replaceChildren(...[...new Set(agents.map((t) => t.principal))].map((p) => el("option", { value: p })));
  const shown = data.tokens.filter((t) => t.active);
  list.replaceChildren(...shown.map(tokenItem));
  const gone = data.tokens.length - shown.length;
  if (gone) { list.append(el("li", { class: "empty", text: `${gone} revoked or expired ${gone === 1 ? "token" : "tokens"} not shown.` })); }
  if (!data.tokens.length) { list.append(el("li", { class: "empty", text: "No tokens." })); }
}

function tokenItem(t) {
  const label = t.principal === me.owner ? "You" : name(t.principal);
  const item = el("li", { class: "token", "data-token": t.id },
    el("p", { class: "who-name" }, el("strong", { text: label }), t.label ? ` — ${t.label}` : "", t.current ? " (this tab)" : ""),
    el("p", { class: "hint" }, `may ${t.scopes.map((s) => SCOPE_WORDS[s] || s).join(", ")} · issued `, when(t.created_at),
      t.expires_at ? el("span", {}, " · expires ", when(t.expires_at)) : " · never expires"));
  if (!t.current) {
    item.append(button("Revoke…", async () => {
      const answer = await confirmWith({
        title: `Revoke ${label}'s token?`,
        text: `${label} can no longer read or propose anything with it, from this moment.`,
        reason: "none", ok: "Revoke",
      });
      if (answer) { await act("Revoked.", () => api("POST", `/api/tokens/${encodeURIComponent(t.id)}/revoke`)); }
    }, "danger revoke", { "aria-label": `Revoke ${label}'s token ${t.id}` }));
  }
  return item;
}

async function download(fmt) {
  try {
    const response = await request("GET", "/api/export?format=" + fmt);
    const blob = await response.blob();
    // The server names the file: a zip holding the export with its restore copy and checkpoint.
    const named = /filename="([^"]+)"/.exec(response.headers.get("Content-Disposition") || "");
    const file = named ? named[1] : `troth-${fmt}.zip`;
    const url = URL.createObjectURL(blob);
    const a = el("a", { href: url, download: file, hidden: "" });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
    say(`Downloaded ${file}.`, "ok");
  } catch (error) {
    say(error.message, "error");
  }
}

async function addMemory(event) {
  event.preventDefault();
  const tags = $("add-tags").value.split(",").map((t) => t.trim()).filter(Boolean);
  const body = { content: $("add-content").value.trim(), kind: $("add-kind").value, topic: $("add-topic").value, tags };
  if ($("add-reason").value.trim()) { body.reason = $("add-reason").value.trim(); }
  try {
    const written = await api("POST", "/api/memories", body);
    $("add-form").reset();
    say(written.status === "active" ? "Remembered." : `Kept as “${STATUS_WORDS[written.status] || written.status}”: ${written.why}.`, "ok");
    $("status").append(" ", link(written.id, "See it"));
  } catch (error) {
    say(error.message, "error");
  }
}

function show(name, keepStatus) {
  view = name;
  for (const b of document.querySelectorAll("nav button")) {
    b.setAttribute("aria-pressed", String(b.dataset.view === name));
  }
  for (const panel of document.querySelectorAll("[data-view-panel]")) {
    panel.hidden = panel.dataset.viewPanel !== name;
  }
  if (!keepStatus) { say(""); }
  refresh();
}

function route() {
  if (location.hash.startsWith("#memory/")) {
    show("memory", true);
    $("memory-title").focus();
  }
}

// -- an application asking for access (OAuth consent) ------------------------------------

function consentId() { return new URLSearchParams(window.location.search).get("consent"); }

async function showConsent(id) {
  const request = await api("GET", `/api/oauth/consent/${encodeURIComponent(id)}`);
  $("consent-text").textContent =
    `${request.client_name} asks to act on your memory as ${request.principal}. It may:`;
  $("consent-scopes").replaceChildren(...request.scopes.map((scope) =>
    el("li", { text: `${SCOPE_WORDS[scope] || scope} (${scope})` })));
  $("consent-where").textContent = `Either way you go back to ${request.redirect_uri}.`;
  $("consent").hidden = false;
}

async function decideConsent(grant) {
  try {
    const answer = await api("POST", `/api/oauth/consent/${encodeURIComponent(consentId())}`, { grant });
    say(grant ? "Access granted." : "Access refused.", "ok");
    window.location.assign(answer.redirect);
  } catch (error) {
    say(error.message, "error");
  }
}

// -- signing in -------------------------------------------------------------------------

async function signIn(value) {
  sessionStorage.setItem(KEY, value);
  try {
    me = await api("GET", "/api/me");
    if (!me.principal.startsWith("human:")) {
      throw new Error("This page is for people: sign in with a human: token, not " + me.principal);
    }
    $("who").textContent = "Signed in as " + me.principal.slice("human:".length);
    $("who").title = "This token may " + me.scopes.map((s) => SCOPE_WORDS[s] || s).join(", ");
    $("who").hidden = false;
    $("sign-out").hidden = false;
    $("sign-in").hidden = true;
    $("app").hidden = false;
    $("sign-in-error").textContent = "";
    if (location.hash.startsWith("#memory/")) { route(); } else { show("inbox"); }
    if (consentId()) { showConsent(consentId()).catch((error) => say(error.message, "error")); }
  } catch (error) {
    sessionStorage.removeItem(KEY);
    $("sign-in-error").textContent = error.message;
  }
}

function signOut(message) {
  sessionStorage.removeItem(KEY);
  me = null;
  $("app").hidden = true;
  $("who").hidden = true;
  $("sign-out").hidden = true;
  $("sign-in").hidden = false;
  $("sign-in-error").textContent = message || "";
}

document.addEventListener("DOMContentLoaded", () => {
  document.body.append(el("datalist", { id: "agents" }));
  buildFilters("search", false);
  buildFilters("all", true);
  $("sign-in-form").addEventListener("submit", (event) => {
    event.preventDefault();
    signIn($("token").value.trim());
    $("token").value = "";
  });
  $("sign-out").addEventListener("click", () => signOut());
  for (const b of document.querySelectorAll("nav button")) {
    b.addEventListener("click", () => {
      if (location.hash) { history.pushState(null, "", location.pathname); }
      show(b.dataset.view);
    });
  }
  window.addEventListener("hashchange", route);
  $("search-form").addEventListener("submit", (event) => {
    event.preventDefault();
    say("");
    search().catch((error) => say(error.message, "error"));
  });
  $("all-form").addEventListener("submit", (event) => {
    event.preventDefault();
    allOffset = 0;
    say("");
    refresh();
  });
  $("all-prev").addEventListener("click", () => { allOffset = Math.max(0, allOffset - PAGE); refresh(); });
  $("all-next").addEventListener("click", () => { allOffset += PAGE; refresh(); });
  $("select-all").addEventListener("change", () => {
    for (const box of document.querySelectorAll("#inbox-list input.pick")) { box.checked = $("select-all").checked; }
    updateBulk();
  });
  $("bulk-approve").addEventListener("click", () => decideSelected("approve"));
  $("bulk-reject").addEventListener("click", () => decideSelected("reject"));
  $("verify").addEventListener("click", () => { say(""); refresh(); });
  for (const b of document.querySelectorAll("[data-export]")) {
    b.addEventListener("click", () => download(b.dataset.export));
  }
  $("add-form").addEventListener("submit", addMemory);
  $("consent-grant").addEventListener("click", () => decideConsent(true));
  $("consent-refuse").addEventListener("click", () => decideConsent(false));
  if (token()) { signIn(token()); }
});
