// troth review page: no framework, no build step, no third-party code.
// The token lives in this tab's sessionStorage and travels only in the Authorization
// header; the server refuses cross-site writes and sends no CORS headers.
"use strict";

const KEY = "troth.token";
const $ = (id) => document.getElementById(id);

function token() { return sessionStorage.getItem(KEY); }

async function api(method, path, body) {
  const headers = { "Authorization": "Bearer " + token(), "Accept": "application/json" };
  const init = { method, headers, credentials: "omit", cache: "no-store" };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  const data = await response.json().catch(() => ({}));
  if (response.status === 401) { signOut("Your token is no longer valid; sign in again."); }
  if (!response.ok) { throw new Error(data.message || ("HTTP " + response.status)); }
  return data;
}

function say(text, kind) {
  const status = $("status");
  status.textContent = text;
  status.className = "status " + (kind || "");
}

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (name === "text") { node.textContent = value; } else { node.setAttribute(name, value); }
  }
  for (const child of children) { if (child) { node.append(child); } }
  return node;
}

function button(label, onClick, cls) {
  const b = el("button", { type: "button", text: label });
  if (cls) { b.className = cls; }
  b.addEventListener("click", onClick);
  return b;
}

// -- confirmation dialog for forget and redact ------------------------------------------

function confirmWith(title, text) {
  const dialog = $("confirm");
  $("confirm-title").textContent = title;
  $("confirm-text").textContent = text;
  $("confirm-reason").value = "";
  dialog.showModal();
  return new Promise((resolve) => {
    const done = (value) => {
      $("confirm-form").removeEventListener("submit", onSubmit);
      $("confirm-cancel").removeEventListener("click", onCancel);
      dialog.removeEventListener("cancel", onCancel);
      resolve(value);
    };
    const onSubmit = () => done($("confirm-reason").value.trim() || null);
    const onCancel = () => { dialog.close(); done(null); };
    $("confirm-form").addEventListener("submit", onSubmit);
    $("confirm-cancel").addEventListener("click", onCancel);
    dialog.addEventListener("cancel", onCancel);
  });
}

// -- memory cards -------------------------------------------------------------------------

async function act(label, work) {
  try {
    await work();
    say(label, "ok");
  } catch (error) {
    say(error.message, "error");
  }
  await refresh();
}

function card(memory) {
  const item = el("li", { class: "memory", "data-id": memory.id, "data-status": memory.status });
  item.append(el("p", { class: "content", text: memory.content }));
  const by = memory.on_behalf_of ? memory.actor + " for " + memory.on_behalf_of : memory.actor;
  item.append(el("p", {
    class: "meta",
    text: [memory.status, memory.kind, memory.topic, memory.sensitivity, "by " + by,
      "via " + memory.channel, memory.created_at, memory.id].join(" · "),
  }));
  const actions = el("div", { class: "actions" });
  if (memory.status === "proposed") {
    actions.append(
      button("Approve", () => act("Approved.", () => api("POST", `/api/memories/${memory.id}/approve`, {})), "primary"),
      button("Reject", () => act("Rejected.", () => api("POST", `/api/memories/${memory.id}/reject`, {}))),
      button("Edit", () => editor(item, memory)),
    );
  }
  actions.append(button("Audit trail", () => detail(memory.id)));
  if (["proposed", "active", "rejected", "expired"].includes(memory.status)) {
    actions.append(button("Forget", async () => {
      const reason = await confirmWith("Forget this memory?", `"${memory.content}" leaves every search at once.`);
      if (reason) { await act("Forgotten.", () => api("POST", `/api/memories/${memory.id}/forget`, { reason })); }
    }, "danger"));
  }
  if (!memory.redacted) {
    actions.append(button("Redact", async () => {
      const reason = await confirmWith("Erase this memory's text for good?",
        `The text "${memory.content}" will be erased from every file; the chain keeps only that something was here.`);
      if (reason) { await act("Redacted.", () => api("POST", `/api/memories/${memory.id}/redact`, { reason })); }
    }, "danger"));
  }
  item.append(actions);
  return item;
}

function editor(item, memory) {
  if (item.querySelector("textarea")) { return; }
  const area = el("textarea", { "aria-label": "Edited text" });
  area.value = memory.content;
  const save = button("Save and approve", () => act("Edited and approved.",
    () => api("POST", `/api/memories/${memory.id}/edit`, { content: area.value })), "primary");
  item.insertBefore(el("div", { class: "editor" }, area, save), item.querySelector(".actions"));
  area.focus();
}

function fill(listId, memories, empty) {
  const list = $(listId);
  list.replaceChildren(...memories.map(card));
  if (!memories.length) { list.append(el("li", { class: "hint", text: empty })); }
}

async function detail(id) {
  try {
    const memory = await api("GET", `/api/memories/${encodeURIComponent(id)}`);
    const fields = $("detail-fields");
    fields.replaceChildren();
    for (const name of ["id", "status", "content", "kind", "topic", "sensitivity", "actor",
      "on_behalf_of", "channel", "reason", "created_at", "updated_at", "supersedes", "superseded_by"]) {
      if (memory[name] !== null && memory[name] !== "") {
        fields.append(el("dt", { text: name }), el("dd", { text: String(memory[name]) }));
      }
    }
    $("detail-audit").replaceChildren(...memory.audit.map((a) =>
      el("li", { text: `${a.at} — ${a.action} by ${a.actor}${a.note ? ": " + a.note : ""}` })));
    $("detail").hidden = false;
    $("detail").scrollIntoView();
  } catch (error) {
    say(error.message, "error");
  }
}

// -- views ------------------------------------------------------------------------------

let view = "inbox";

async function refresh() {
  try {
    if (view === "inbox") {
      const page = await api("GET", "/api/memories?status=proposed&limit=200");
      $("inbox-count").textContent = `(${page.total})`;
      fill("inbox-list", page.memories, "Nothing waits for you.");
    } else if (view === "all") {
      const page = await api("GET", "/api/memories?limit=200");
      fill("all-list", page.memories, "No memories yet.");
    } else if (view === "search" && $("search-q").value.trim()) {
      await search();
    } else if (view === "agents") {
      await agents();
    }
  } catch (error) {
    say(error.message, "error");
  }
}

async function search() {
  const q = $("search-q").value.trim();
  const found = await api("GET", "/api/search?" + new URLSearchParams({ q, limit: "50" }));
  const memories = await Promise.all(found.hits.map((h) => api("GET", `/api/memories/${h.id}`)));
  fill("search-list", memories, "Nothing found.");
}

async function agents() {
  const found = await api("GET", "/api/agents");
  const list = $("agents-list");
  list.replaceChildren(...found.tokens.map((t) => {
    const item = el("li", { class: "memory", "data-id": t.id });
    item.append(el("p", { class: "content", text: `${t.principal}${t.label ? " — " + t.label : ""}` }));
    const state = t.revoked_at ? "revoked " + t.revoked_at : (t.expires_at ? "expires " + t.expires_at : "never expires");
    item.append(el("p", { class: "meta", text: [t.scopes.join(", "), "since " + t.created_at, state, t.id].join(" · ") }));
    if (!t.revoked_at) {
      const actions = el("div", { class: "actions" });
      actions.append(button("Revoke", () => act("Revoked.", () => api("POST", `/api/agents/${t.id}/revoke`, {})), "danger"));
      item.append(actions);
    }
    return item;
  }));
  if (!found.tokens.length) { list.append(el("li", { class: "hint", text: "No agent acts for you." })); }
}

async function verify() {
  const status = await api("GET", "/api/verify");
  const list = $("chain-status");
  list.replaceChildren();
  const rows = [["owner", status.owner], ["chain", status.ok ? "verifies" : "BROKEN"],
    ["entries", String(status.length)], ["head", status.head || "(empty)"],
    ["projection", status.projection_ok ? "matches the ledger" : "differs from the ledger"]];
  if (status.broken_at !== null) { rows.push(["broken at", `#${status.broken_at}: ${status.reason}`]); }
  for (const [name, value] of rows) {
    list.append(el("dt", { text: name }), el("dd", { text: value, class: name === "chain" ? (status.ok ? "ok" : "bad") : "" }));
  }
}

function show(name) {
  view = name;
  for (const b of document.querySelectorAll("nav button")) {
    b.setAttribute("aria-pressed", String(b.dataset.view === name));
  }
  for (const panel of document.querySelectorAll("[data-view-panel]")) {
    panel.hidden = panel.dataset.viewPanel !== name;
  }
  $("detail").hidden = true;
  refresh();
}

// -- an application asking for access (OAuth consent) ------------------------------------

const SCOPE_WORDS = {
  "memory:read": "read and search your memories",
  "memory:write": "propose memories (they wait for your approval here) and forget memories",
  "memory.sensitive:read": "see your sensitive memories (health, finance, location …)",
};

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

async function decide(grant) {
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
    const me = await api("GET", "/api/me");
    if (!me.principal.startsWith("human:")) {
      throw new Error("This page is for people: sign in with a human: token, not " + me.principal);
    }
    $("who").textContent = `${me.principal} · ${me.scopes.join(", ")}`;
    $("who").hidden = false;
    $("sign-out").hidden = false;
    $("sign-in").hidden = true;
    $("app").hidden = false;
    $("sign-in-error").textContent = "";
    show("inbox");
    if (consentId()) { showConsent(consentId()).catch((error) => say(error.message, "error")); }
  } catch (error) {
    sessionStorage.removeItem(KEY);
    $("sign-in-error").textContent = error.message;
  }
}

function signOut(message) {
  sessionStorage.removeItem(KEY);
  $("app").hidden = true;
  $("who").hidden = true;
  $("sign-out").hidden = true;
  $("sign-in").hidden = false;
  $("sign-in-error").textContent = message || "";
}

document.addEventListener("DOMContentLoaded", () => {
  $("sign-in-form").addEventListener("submit", (event) => {
    event.preventDefault();
    signIn($("token").value.trim());
    $("token").value = "";
  });
  $("sign-out").addEventListener("click", () => signOut());
  for (const b of document.querySelectorAll("nav button")) {
    b.addEventListener("click", () => show(b.dataset.view));
  }
  $("search-form").addEventListener("submit", (event) => {
    event.preventDefault();
    search().catch((error) => say(error.message, "error"));
  });
  $("verify").addEventListener("click", () => verify().catch((error) => say(error.message, "error")));
  $("detail-close").addEventListener("click", () => { $("detail").hidden = true; });
  $("consent-grant").addEventListener("click", () => decide(true));
  $("consent-refuse").addEventListener("click", () => decide(false));
  if (token()) { signIn(token()); }
});
