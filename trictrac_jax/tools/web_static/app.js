// The Trictrac page: draws the server's view of a game and sends the player's clicks.
// The server (trictrac_jax/tools/web.py) decides everything; this file only shows it.
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";
const $ = (id) => document.getElementById(id);
let config = null;    // the board's geometry and the server's limits (/api/config)
let view = null;      // the game as the server last sent it
let selected = null;  // the field of the checker the player picked, or null

async function api(method, path, body) {
  document.body.dataset.busy = "1";
  try {
    const response = await fetch(path, {
      method,
      headers: body ? {"Content-Type": "application/json"} : {},
      body: body ? JSON.stringify(body) : undefined,
    });
    const data = await response.json();
    return {ok: response.ok, status: response.status, data};
  } catch (error) {
    return {ok: false, status: 0, data: {error: `The server does not answer (${error}).`}};
  } finally {
    delete document.body.dataset.busy;
  }
}

function say(text, kind = "") {
  const message = $("message");
  message.textContent = text;
  message.className = kind;
}

// --- drawing ---------------------------------------------------------------------------

function show(next, wholeLog) {
  view = next;
  selected = null;
  location.hash = "game=" + view.game;
  $("board").innerHTML = view.svg;
  drawOverlay();
  showScore();
  showLog(view.log, wholeLog);
  $("hints").replaceChildren();
  $("string-id").textContent = view.string_id;
  $("download").href = `/api/games/${view.game}/record`;
  $("confirm").disabled = view.complete === null;
  $("undo").disabled = view.pending.length === 0;
  $("go").hidden = !view.go;
  $("pass").hidden = view.pass === null;
  $("hint").disabled = !view.yours || !view.hints;
  document.body.dataset.turn = view.turn;
  document.body.dataset.pending = view.pending.length;
  document.body.dataset.over = view.over ? "1" : "";
  say(instructions(), view.over ? "result" : "");
}

function instructions() {
  if (view.over) return view.result;
  if (view.complete !== null) return "Confirm your move, or undo it.";
  if (view.pass !== null) return "No move is possible: pass.";
  const bot = view.bot_move ? `The bot played ${view.bot_move}. ` : "";
  const go = view.go ? "You won a hole: hold (make your move) or go (new setting). " : "";
  return bot + go + (view.pending.length ? "Now your second checker." :
    "Your move: click a checker, then the field it goes to.");
}

function svgElement(name, attributes, parent) {
  const element = document.createElementNS(SVG_NS, name);
  for (const [key, value] of Object.entries(attributes)) element.setAttribute(key, value);
  parent.appendChild(element);
  return element;
}

function targetsOf(field) {
  return view.options[String(field)] || [];
}

// Hit areas over the fields (and the player's bear-off tray), marked as sources, the picked
// checker and its targets.
function drawOverlay() {
  const svg = $("board").querySelector("svg");
  svg.querySelector("#overlay")?.remove();
  const overlay = svgElement("g", {id: "overlay"}, svg);
  const targets = selected === null ? [] : targetsOf(selected);
  const area = (field, [x, y, w, h]) => {
    let kind = field ? "hit" : "hit off";
    if (field === selected) kind += " selected";
    else if (targets.includes(field)) kind += " target";
    else if (selected === null && field !== 0 && targetsOf(field).length) kind += " source";
    const rect = svgElement("rect", {x, y, width: w, height: h, class: kind,
                                     id: field ? `field-${field}` : "field-off"}, overlay);
    rect.dataset.field = field;
  };
  for (let field = 1; field <= 24; field++) area(field, config.fields[field]);
  const off = config.off[view.you];
  area(0, off);
  const [x, y] = [off[0] + off[2] / 2, off[1] + off[3] / 2];
  const label = svgElement("text", {x, y, class: "off-label", "text-anchor": "middle",
                                    transform: `rotate(-90 ${x} ${y})`}, overlay);
  label.textContent = "off";
  overlay.addEventListener("click", (event) => {
    const field = event.target.dataset?.field;
    if (field !== undefined) clickField(Number(field));
  });
}

function drawArrows(arrows) {
  const svg = $("board").querySelector("svg");
  svg.querySelector("#hint-arrows")?.remove();
  const group = svgElement("g", {id: "hint-arrows"}, svg);
  for (const [x1, y1, x2, y2] of arrows) {
    svgElement("line", {x1, y1, x2, y2, class: "hint-arrow"}, group);
    svgElement("circle", {cx: x2, cy: y2, r: 9, class: "hint-arrow-end"}, group);
  }
}

function showScore() {
  const names = ["White", "Black"];
  for (const colour of [0, 1]) {
    const who = colour === view.you ? "you" : "bot";
    const turn = !view.over && view.position.player === colour ? " ◀" : "";
    $(`score-${colour}-name`).textContent = `${names[colour]} (${who})${turn}`;
    $(`score-${colour}-points`).textContent = view.position.points[colour];
    $(`score-${colour}-holes`).textContent = `${view.position.holes[colour]}/12`;
    $(`score-${colour}-bredouille`).textContent = view.position.bredouille[colour] ? "yes" : "no";
  }
}

function showLog(lines, whole) {
  const log = $("log");
  if (whole) log.replaceChildren();
  for (const line of lines) {
    const div = document.createElement("div");
    div.textContent = line;
    div.className = line.startsWith("  ") ? "detail" : "line";
    log.appendChild(div);
  }
  log.scrollTop = log.scrollHeight;
}

// --- the player's clicks -------------------------------------------------------------------

async function clickField(field) {
  if (!view) return;
  if (!view.yours) return say(view.over ? view.result : "It is not your turn.");
  if (selected !== null) {
    if (field === selected) { selected = null; return drawOverlay(); }
    if (!targetsOf(field).length || targetsOf(selected).includes(field)) {
      // a target, or a field the server will explain why not
      return request("POST", "move", {from: selected, to: field});
    }
  }
  if (field === 0) return say("Click a checker first, then where it goes.", "refused");
  if (targetsOf(field).length) { selected = field; return drawOverlay(); }
  const answer = await api("GET", `/api/games/${view.game}/why?from=${field}`);
  say(answer.data.reason || answer.data.error || "", "refused");
}

// A request that changes the game: the new view, or the reason it was refused.
async function request(method, action, body = {}) {
  const answer = await api(method, `/api/games/${view.game}/${action}`,
                           {turn: view.turn, ...body});
  if (answer.ok) return show(answer.data, false);
  if (answer.status === 404) return gone(answer.data.error);
  selected = null;
  drawOverlay();
  say(answer.data.error, "refused");
}

function gone(reason) {
  say(reason, "refused");
  for (const id of ["confirm", "undo", "go", "pass", "hint"]) $(id).disabled = true;
  if (view) view.yours = false;
}

async function hint() {
  const answer = await api("GET", `/api/games/${view.game}/hint`);
  if (!answer.ok) return say(answer.data.error, "refused");
  const list = $("hints");
  list.replaceChildren();
  for (const move of answer.data.moves) {
    const item = document.createElement("li");
    const worth = move.points === null ? move.worth.toFixed(3)
      : `${move.points >= 0 ? "+" : ""}${move.points.toFixed(1)} points`;
    item.textContent = `${move.move}: ${worth} `;
    item.title = "The champion's expected score margin still to come (12 points a hole), "
      + "averaged over the next roll";
    item.addEventListener("mouseenter", () => drawArrows(move.arrows));
    item.addEventListener("mouseleave", () => drawArrows([]));
    const play = document.createElement("button");
    play.textContent = "play";
    play.addEventListener("click", () => request("POST", "play", {action: move.action}));
    item.appendChild(play);
    list.appendChild(item);
  }
  drawArrows(answer.data.moves.length ? answer.data.moves[0].arrows : []);
}

// --- new games and loading -------------------------------------------------------------------

function seatAndSeed() {
  const seed = $("seed").value.trim();
  return {seat: document.querySelector("input[name=seat]:checked").value,
          seed: seed === "" ? null : Number(seed)};
}

async function newGame(extra = {}) {
  say("Starting a game…");
  const answer = await api("POST", "/api/games", {...seatAndSeed(), ...extra});
  if (!answer.ok) return say(answer.data.error, "refused");
  show(answer.data, true);
}

async function loadRecord(file) {
  let record;
  try {
    record = JSON.parse(await file.text());
  } catch (error) {
    return say(`${file.name} is not a JSON game record (${error.message}).`, "refused");
  }
  await newGame({record});
}

async function start() {
  config = (await api("GET", "/api/config")).data;
  $("against").textContent = `against ${config.opponent}`;
  $("confirm").addEventListener("click", () => request("POST", "play", {action: view.complete}));
  $("undo").addEventListener("click", () => request("POST", "undo"));
  $("go").addEventListener("click", () => request("POST", "play", {action: 1}));
  $("pass").addEventListener("click", () => request("POST", "play", {action: view.pass}));
  $("hint").addEventListener("click", hint);
  $("new-game").addEventListener("submit", (event) => { event.preventDefault(); newGame(); });
  $("load-position").addEventListener("submit", (event) => {
    event.preventDefault();
    newGame({start: $("position").value.trim()});
  });
  $("record-file").addEventListener("change", (event) => {
    if (event.target.files.length) loadRecord(event.target.files[0]);
    event.target.value = "";
  });
  const game = new URLSearchParams(location.hash.slice(1)).get("game");
  if (!game) return newGame();
  const answer = await api("GET", `/api/games/${game}`);
  if (answer.ok) return show(answer.data, true);
  say(answer.data.error + " ", "refused");
}

start();
