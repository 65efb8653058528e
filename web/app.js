// The rexnlu page: builds a POST /v1/extract request from the form, then shows the spans
// highlighted in the text and the paths as a table. Offsets are code points, so the text is
// split with Array.from (JavaScript strings index UTF-16 units).
"use strict";

const $ = (id) => document.getElementById(id);

// Which extra fields each task uses (tasks build the schema and the text on the server).
const TASK_FIELDS = {
  "": ["schema"],
  ner: ["labels"], re: ["labels"], ee: ["labels"], absa: ["labels"],
  sentiment: ["labels"], classify: ["labels"], multi_classify: ["labels"],
  nli: ["text2"], matching: ["text2"], mrc: ["question", "labels"], coref: ["labels"],
};
const LABEL_HINTS = {
  ner: "人物, 地理位置, 组织机构", re: "人物/毕业院校(组织机构)", ee: "毕业(事件触发词)/时间",
  absa: "正向情感, 负向情感", sentiment: "(optional) 正向情感, 负向情感", classify: "体育, 财经, 科技",
  multi_classify: "体育, 财经, 科技", mrc: "(optional) answer choices", coref: "代词, 候选",
};

const PALETTE = ["#ffd166", "#8ecae6", "#b5e48c", "#f4a3a8", "#cdb4db", "#ffb703", "#a8dadc", "#f9c74f", "#90be6d", "#e9c46a"];
const colorCache = new Map();
function colorOf(type) {
  if (!colorCache.has(type)) colorCache.set(type, PALETTE[colorCache.size % PALETTE.length]);
  return colorCache.get(type);
}

function showTaskFields() {
  const fields = TASK_FIELDS[$("task").value] || [];
  $("schema-row").hidden = !fields.includes("schema");
  $("labels-row").hidden = !fields.includes("labels");
  $("text2-row").hidden = !fields.includes("text2");
  $("question-row").hidden = !fields.includes("question");
  $("labels").placeholder = LABEL_HINTS[$("task").value] || "";
}

function buildRequest() {
  const task = $("task").value;
  const body = { text: $("text").value };
  if (!task) {
    try {
      body.schema = JSON.parse($("schema").value);
    } catch (e) {
      throw new Error("The schema is not valid JSON: " + e.message);
    }
    return body;
  }
  body.task = task;
  const labels = $("labels").value.split(/[,，]/).map((s) => s.trim()).filter((s) => s);
  if (labels.length) body.labels = labels;
  if (!$("text2-row").hidden) body.text2 = $("text2").value;
  if (!$("question-row").hidden) body.question = $("question").value;
  return body;
}

function element(tag, className, text) {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}

// A classification result: the item's span is the task's marker, its type is the label.
const MARKERS = ["[CLASSIFY]", "[MULTICLASSIFY]"];
const isMarker = (item) => MARKERS.includes(item.span);

// The text as the user wrote it: a marker the task put in front (result.text) is left out, and
// the other offsets move back by its length (markers are ASCII: one code point per character).
function shownText(text) {
  const marker = MARKERS.find((m) => text.startsWith(m));
  return marker ? { text: text.slice(marker.length), shift: marker.length } : { text, shift: 0 };
}

// Marks every span of every path in the text; overlapping spans deepen the underline.
// Classification labels are shown as labels above the text, never as a marked range.
function renderHighlighted(rawText, paths) {
  const box = $("highlighted");
  box.replaceChildren();
  const { text, shift } = shownText(rawText);
  const chars = Array.from(text);
  const spans = [];
  const labels = [];
  for (const path of paths) {
    for (const item of path) {
      if (isMarker(item)) {
        labels.push(item);
        continue;
      }
      const [start, end] = [item.offset[0] - shift, item.offset[1] - shift];
      if (start >= 0 && end > start && end <= chars.length) spans.push({ start, end, type: item.type });
    }
  }
  const found = $("labels-found");
  found.replaceChildren();
  found.hidden = !labels.length;
  if (labels.length) found.append(element("span", "caption", "label:"));
  for (const item of labels) {
    const tag = element("span", "label", item.type);
    tag.style.background = colorOf(item.type);
    found.append(tag);
    if (item.probability !== undefined) found.append(element("span", "prob", item.probability.toFixed(3)));
  }
  const cuts = new Set([0, chars.length]);
  for (const s of spans) { cuts.add(s.start); cuts.add(s.end); }
  const bounds = [...cuts].sort((a, b) => a - b);
  for (let i = 0; i + 1 < bounds.length; i++) {
    const [from, to] = [bounds[i], bounds[i + 1]];
    const piece = chars.slice(from, to).join("");
    const covering = spans.filter((s) => s.start <= from && s.end >= to);
    if (!covering.length) {
      box.append(document.createTextNode(piece));
      continue;
    }
    // The innermost (shortest) span gives the color.
    covering.sort((a, b) => (a.end - a.start) - (b.end - b.start));
    const mark = element("mark", "depth-" + Math.min(covering.length, 3), piece);
    mark.style.background = colorOf(covering[0].type);
    mark.title = [...new Set(covering.map((s) => s.type))].join(", ");
    mark.dataset.type = covering[0].type;
    box.append(mark);
  }
  const legend = $("legend");
  legend.replaceChildren();
  for (const type of [...new Set(spans.map((s) => s.type))]) {
    const tag = element("span", "", type);
    tag.style.background = colorOf(type);
    legend.append(tag);
  }
}

function renderTable(paths, shift) {
  const body = $("paths").querySelector("tbody");
  body.replaceChildren();
  if (!paths.length) {
    const row = element("tr");
    const cell = element("td", "empty", "nothing found");
    cell.colSpan = 2;
    row.append(cell);
    body.append(row);
    return;
  }
  paths.forEach((path, i) => {
    const row = element("tr", "path-row");
    row.append(element("td", "", String(i + 1)));
    const cell = element("td");
    path.forEach((item, k) => {
      if (k) cell.append(element("span", "arrow", " → "));
      // A label (classification) is its type alone, as the CLI's readable view shows it.
      const tag = isMarker(item) ? element("span", "item label", item.type)
        : element("span", "item", `${item.type}: ${item.span} [${item.offset[0] - shift}, ${item.offset[1] - shift})`);
      tag.style.background = colorOf(item.type);
      cell.append(tag);
      if (item.probability !== undefined) cell.append(element("span", "prob", item.probability.toFixed(3)));
    });
    row.append(cell);
    body.append(row);
  });
}

function showError(message) {
  $("error").textContent = message;
  $("error").hidden = !message;
}

function headers() {
  const h = { "Content-Type": "application/json" };
  const key = $("api-key").value.trim();
  if (key) h.Authorization = "Bearer " + key;
  return h;
}

async function extract(event) {
  event.preventDefault();
  showError("");
  let body;
  try {
    body = buildRequest();
  } catch (e) {
    showError(e.message);
    return;
  }
  $("run").disabled = true;
  const started = performance.now();
  try {
    const response = await fetch("v1/extract", { method: "POST", headers: headers(), body: JSON.stringify(body) });
    const result = await response.json();
    if (!response.ok) {
      showError(`${response.status} ${result.error_type || ""}: ${result.error || response.statusText}`);
      return;
    }
    // A task may rewrite the text (e.g. a [CLASSIFY] marker): the offsets then refer to result.text,
    // which is shown without the marker (offsets shifted back), the label above it.
    const shown = result.text !== undefined ? result.text : body.text;
    renderHighlighted(shown, result.output);
    renderTable(result.output, shownText(shown).shift);
    for (const w of result.warnings || []) showError("warning: " + w);
    $("timing").textContent = `${result.output.length} paths, ${Math.round(performance.now() - started)} ms`;
  } catch (e) {
    showError("Request failed: " + e.message);
  } finally {
    $("run").disabled = false;
  }
}

// The header names the model family the service loaded (/info): RexUniNLU or SiameseUIE.
const FAMILY_NAMES = { "rex-uninlu": "RexUniNLU", "siamese-uie": "SiameseUIE" };
async function showFamily() {
  try {
    const response = await fetch("info", { headers: headers() });
    const family = (await response.json()).model.family;
    if (FAMILY_NAMES[family]) $("family").textContent = FAMILY_NAMES[family];
  } catch (e) {
    // the health badge reports an unreachable service
  }
}

async function checkHealth() {
  const badge = $("health");
  try {
    const response = await fetch("health");
    const health = await response.json();
    badge.textContent = health.status === "ok" ? "model ready" : "model " + health.status;
    badge.className = "health " + (response.ok ? "ok" : "down");
  } catch (e) {
    badge.textContent = "service unreachable";
    badge.className = "health down";
  }
}

$("task").addEventListener("change", showTaskFields);
$("form").addEventListener("submit", extract);
showTaskFields();
checkHealth().then(showFamily);
