// The Trictrac page: draws the server's view of a game and sends the player's clicks.
// The server (trictrac_jax/tools/web.py) decides everything, the rules and whether a
// position set up on the board can be played included; this file only shows it.
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";
const NAMES = ["White", "Black"];
const SEATS = ["white", "black"];
const DIE_FACES = ["", "⚀", "⚁", "⚂", "⚃", "⚄", "⚅"];
const $ = (id) => document.getElementById(id);
let config = null;    // the board's geometry and the server's limits (/api/config)
let view = null;      // the game as the server last sent it
let selected = null;  // the field of the checker the player picked, or null
let setup = null;     // the position being set up on the board, or null

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

// The page's words, in French where the player asked for the French names.
function words(text) {
  if (!text || !$("french").checked) return text;
  for (const [english, french] of config.french) text = text.split(english).join(french);
  return text;
}

function say(text, kind = "") {
  const message = $("message");
  message.textContent = words(text);
  message.className = kind;
}

// --- drawing ---------------------------------------------------------------------------

function show(next, wholeLog) {
  view = next;
  selected = null;
  leaveSetup();
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
  $("against").textContent = view.mode === "free" ? "free play: you move both colours"
    : `against ${view.opponent}`;
  document.body.dataset.turn = view.turn;
  document.body.dataset.version = view.version;
  document.body.dataset.pending = view.pending.length;
  document.body.dataset.over = view.over ? "1" : "";
  say(instructions(), view.over ? "result" : "");
}

function instructions() {
  if (view.over) return view.result;
  if (view.complete !== null) return "Confirm your move, or undo it.";
  const other = view.other_turn ? view.other_turn + " " : "";
  if (view.pass !== null) return other + "No move is possible: pass.";
  const go = view.go ? "You won a hole: hold (make your move) or go (new setting). " : "";
  const who = view.mode === "free" ? `${NAMES[view.position.player]} to move: ` : "Your move: ";
  return other + go + (view.pending.length ? "Now the second checker." :
    who + "click a checker, then the field it goes to.");
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

// Hit areas over the fields (and the mover's bear-off tray), marked as sources, the picked
// checker and its targets; while a position is set up, every field.
function drawOverlay() {
  const svg = $("board").querySelector("svg");
  svg.querySelector("#overlay")?.remove();
  const overlay = svgElement("g", {id: "overlay"}, svg);
  const targets = selected === null || setup ? [] : targetsOf(selected);
  const area = (field, [x, y, w, h]) => {
    let kind = field ? "hit" : "hit off";
    if (setup) kind += " setup";
    else if (field === selected) kind += " selected";
    else if (targets.includes(field)) kind += " target";
    else if (selected === null && field !== 0 && targetsOf(field).length) kind += " source";
    const rect = svgElement("rect", {x, y, width: w, height: h, class: kind,
                                     id: field ? `field-${field}` : "field-off"}, overlay);
    rect.dataset.field = field;
  };
  for (let field = 1; field <= 24; field++) area(field, config.fields[field]);
  if (!setup) {
    const off = config.off[view.you];
    area(0, off);
    const [x, y] = [off[0] + off[2] / 2, off[1] + off[3] / 2];
    const label = svgElement("text", {x, y, class: "off-label", "text-anchor": "middle",
                                      transform: `rotate(-90 ${x} ${y})`}, overlay);
    label.textContent = "off";
  }
  if ($("french").checked) drawQuarterNames(overlay);
  overlay.addEventListener("click", (event) => {
    const field = event.target.dataset?.field;
    if (field === undefined) return;
    if (setup) editField(Number(field));
    else clickField(Number(field));
  });
}

// The quarters' French names from the seat's side, beside the bar between the rows.
function drawQuarterNames(overlay) {
  const you = setup ? SEATS.indexOf(setup.player) : view.you;
  const own = (f) => (you === 0 ? f : 25 - f);  // the seat's field f on the real board
  for (const [name, field] of [["petit jan", own(6)], ["grand jan", own(7)],
                               ["jan de retour", own(19)]]) {
    const [x, y, w, h] = config.fields[field];
    const top = field >= 13;
    const rightHalf = field <= 6 || field >= 19;
    const label = svgElement("text", {
      x: rightHalf ? x + 4 : x + w - 4, y: top ? y + h - 7 : y + 15,
      "text-anchor": rightHalf ? "start" : "end", class: "quarter-label"}, overlay);
    label.textContent = name;
  }
}

function showScore() {
  const human = SEATS.indexOf(view.seat);
  for (const colour of [0, 1]) {
    const who = view.mode === "free" ? "" : colour === human ? " (you)" : " (bot)";
    const turn = !view.over && view.position.player === colour ? " ◀" : "";
    $(`score-${colour}-name`).textContent = `${NAMES[colour]}${who}${turn}`;
    $(`score-${colour}-points`).textContent = view.position.points[colour];
    $(`score-${colour}-holes`).textContent = view.position.holes[colour];
    $(`score-${colour}-bredouille`).textContent = view.position.bredouille[colour] ? "yes" : "no";
    const roll = view.rolls[colour];
    const cell = $(`score-${colour}-roll`);
    cell.textContent = roll ? `${DIE_FACES[roll[0]]}${DIE_FACES[roll[1]]}` : "";
    cell.title = roll ? `${roll[0]}-${roll[1]}` : "";
    cell.dataset.roll = roll ? `${roll[0]}-${roll[1]}` : "";
  }
  $("score-note").hidden = Math.max(...view.position.holes) <= config.holes_to_win;
  $("score-note").textContent = config.past_12;
}

function showLog(lines, whole) {
  const log = $("log");
  if (whole) log.replaceChildren();
  for (const line of lines) {
    const div = document.createElement("div");
    div.textContent = words(line);
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

// A request that changes the game: the new view, or the reason it was refused. A request
// made on a board the game has left (another tab played) brings the board up to date.
async function request(method, action, body = {}) {
  const answer = await api(method, `/api/games/${view.game}/${action}`,
                           {version: view.version, ...body});
  if (answer.ok) return show(answer.data, false);
  if (answer.status === 404) return gone(answer.data.error);
  if (answer.data.stale) return refresh(answer.data.error);
  selected = null;
  drawOverlay();
  say(answer.data.error, "refused");
}

// The game as the server has it now (another tab may have played), told with `reason`.
async function refresh(reason) {
  const answer = await api("GET", `/api/games/${view.game}`);
  if (!answer.ok) return gone(answer.data.error);
  show(answer.data, true);
  if (reason) say(reason, "refused");
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

function drawArrows(arrows) {
  const svg = $("board").querySelector("svg");
  svg.querySelector("#hint-arrows")?.remove();
  const group = svgElement("g", {id: "hint-arrows"}, svg);
  for (const [x1, y1, x2, y2] of arrows) {
    svgElement("line", {x1, y1, x2, y2, class: "hint-arrow"}, group);
    svgElement("circle", {cx: x2, cy: y2, r: 9, class: "hint-arrow-end"}, group);
  }
}

// --- new games and loading -------------------------------------------------------------------

function choices() {
  const seed = $("seed").value.trim();
  return {seat: document.querySelector("input[name=seat]:checked").value,
          mode: document.querySelector("input[name=mode]:checked").value,
          seed: seed === "" ? null : Number(seed)};
}

async function newGame(body) {
  say("Starting a game…");
  const answer = await api("POST", "/api/games", body);
  if (!answer.ok) return say(answer.data.error, "refused");
  show(answer.data, true);
}

async function loadRecord(file) {
  if (file.size > config.limits.body_bytes) {
    return say(`${file.name} is too large for a game record (${file.size} bytes; at most `
               + `${config.limits.body_bytes}).`, "refused");
  }
  let record;
  try {
    record = JSON.parse(await file.text());
  } catch (error) {
    return say(`${file.name} is not a game record: it is not JSON.`, "refused");
  }
  await newGame({record});
}

// --- a position set up by clicking (the server checks it and draws it) -----------------------

function enterSetup() {
  const position = view ? view.position : null;
  setup = {board: position ? [...position.board] : initialBoard(),
           player: SEATS[position ? position.player : 0]};
  const dice = position && position.dice[0] ? position.dice : [1, 1];
  $("setup-player").value = setup.player;
  for (const i of [0, 1]) {
    $(`setup-die-${i}`).value = String(dice[i]);
    $(`setup-points-${i}`).value = position ? position.points[i] : 0;
    $(`setup-holes-${i}`).value = position ? position.holes[i] : 0;
  }
  $("setup-tools").hidden = false;
  $("controls").hidden = true;
  $("hints").replaceChildren();
  drawSetup();
}

// The starting position or an empty board: a game's start, the score at zero.
function setupAfresh(board) {
  setup.board = board;
  for (const i of [0, 1]) $(`setup-points-${i}`).value = $(`setup-holes-${i}`).value = 0;
  drawSetup();
}

function leaveSetup() {
  setup = null;
  delete document.body.dataset.setup;
  $("setup-tools").hidden = true;
  $("controls").hidden = false;
}

function initialBoard() {
  const board = new Array(24).fill(0);
  board[0] = 15;
  board[23] = -15;
  return board;
}

function editField(field) {
  const tool = document.querySelector("input[name=tool]:checked").value;
  const n = setup.board[field - 1];
  if (tool === "off") setup.board[field - 1] = n - Math.sign(n);
  else {
    const sign = tool === "white" ? 1 : -1;
    setup.board[field - 1] = n * sign < 0 ? sign : n + sign;  // the other colour's: replaced
  }
  drawSetup();
}

function setupBody() {
  const number = (id) => Math.max(0, Math.min(11, Math.trunc(Number($(id).value)) || 0));
  setup.player = $("setup-player").value;
  return {board: setup.board, player: setup.player,
          dice: [0, 1].map((i) => Number($(`setup-die-${i}`).value)),
          points: [0, 1].map((i) => number(`setup-points-${i}`)),
          holes: [0, 1].map((i) => number(`setup-holes-${i}`))};
}

async function drawSetup() {
  const answer = await api("POST", "/api/positions", setupBody());
  if (!answer.ok) return say(answer.data.error, "refused");
  setup.preview = answer.data;
  $("board").innerHTML = answer.data.svg;
  drawOverlay();
  $("string-id").textContent = answer.data.string_id;
  document.body.dataset.setup = answer.data.string_id;
  say(answer.data.said, answer.data.problems.length ? "refused" : "");
}

function playSetup() {
  if (setup.preview.problems.length) return say(setup.preview.said, "refused");
  const {seat, mode, seed} = choices();
  newGame({start: setup.preview.string_id, seat, mode, seed});
}

// --- the page ---------------------------------------------------------------------------------

async function start() {
  config = (await api("GET", "/api/config")).data;
  $("french").checked = localStorage.getItem("trictrac-french") === "1";
  for (const select of document.querySelectorAll("select.die")) {
    for (let d = 1; d <= 6; d++) addOption(select, d);
  }
  $("confirm").addEventListener("click", () => request("POST", "play", {action: view.complete}));
  $("undo").addEventListener("click", () => request("POST", "undo"));
  $("go").addEventListener("click", () => request("POST", "play", {action: 1}));
  $("pass").addEventListener("click", () => request("POST", "play", {action: view.pass}));
  $("hint").addEventListener("click", hint);
  $("new-game").addEventListener("submit", (event) => {
    event.preventDefault();
    newGame(choices());
  });
  $("load-position").addEventListener("submit", (event) => {
    event.preventDefault();
    newGame({...choices(), start: $("position").value.trim()});
  });
  $("record-file").addEventListener("change", (event) => {
    if (event.target.files.length) loadRecord(event.target.files[0]);
    event.target.value = "";
  });
  $("setup").addEventListener("click", enterSetup);
  $("setup-initial").addEventListener("click", () => setupAfresh(initialBoard()));
  $("setup-empty").addEventListener("click", () => setupAfresh(new Array(24).fill(0)));
  $("setup-play").addEventListener("click", playSetup);
  $("setup-cancel").addEventListener("click", () => {
    leaveSetup();
    if (view) refresh();
  });
  for (const id of ["setup-player", "setup-die-0", "setup-die-1", "setup-points-0",
                    "setup-holes-0", "setup-points-1", "setup-holes-1"]) {
    $(id).addEventListener("change", drawSetup);
  }
  $("french").addEventListener("change", () => {
    localStorage.setItem("trictrac-french", $("french").checked ? "1" : "");
    showWords();
    if (setup) drawSetup();
    else if (view) refresh();
  });
  showWords();
  // Back on this tab: the game as it is now, if another tab played meanwhile.
  document.addEventListener("visibilitychange", async () => {
    if (document.hidden || !view || setup) return;
    const answer = await api("GET", `/api/games/${view.game}?log_from=${view.log_size}`);
    if (answer.ok && answer.data.version !== view.version) {
      refresh("This game moved on in another tab: here it is now.");
    }
  });
  const game = new URLSearchParams(location.hash.slice(1)).get("game");
  if (!game) return newGame(choices());
  const answer = await api("GET", `/api/games/${game}`);
  if (answer.ok) return show(answer.data, true);
  say(answer.data.error + " ", "refused");
}

function addOption(select, value) {
  const option = document.createElement("option");
  option.value = option.textContent = String(value);
  select.appendChild(option);
}

// Labels that have French names (marked data-words), in the language chosen.
function showWords() {
  for (const element of document.querySelectorAll("[data-words]")) {
    element.dataset.english ??= element.textContent;
    element.textContent = words(element.dataset.english);
  }
}

start();
