"""The page's style and script, served by the page itself (no CDN, no build step)."""

from __future__ import annotations

CSS = """
:root { --ok: #1a7f37; --bad: #cf222e; --run: #9a6700; --muted: #57606a; --line: #d0d7de; }
* { box-sizing: border-box; }
body { font: 15px/1.45 system-ui, sans-serif; margin: 0; padding: 0.8rem; color: #1f2328; max-width: 72rem; }
a { color: #0969da; }
h1 { font-size: 1.3rem; margin: 0.2rem 0 0.6rem; word-break: break-all; }
h2 { font-size: 1.05rem; margin: 1.2rem 0 0.4rem; border-bottom: 1px solid var(--line); }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 0.3rem 0.4rem; border-bottom: 1px solid var(--line);
         vertical-align: top; }
.scroll { overflow-x: auto; }
.status { font-weight: 600; }
.status-needs_action, .status-failed { color: var(--bad); }
.status-running, .status-following { color: var(--run); }
.status-completed { color: var(--ok); }
.muted { color: var(--muted); }
.fleet { font-size: 0.75rem; padding: 0 0.3rem; border: 1px solid var(--line); border-radius: 4px;
         color: var(--muted); }
.facts { display: flex; flex-wrap: wrap; gap: 0.3rem 1.2rem; margin: 0; padding: 0; list-style: none; }
.wave { display: flex; flex-wrap: wrap; gap: 0.4rem; margin: 0.3rem 0; }
.wave.parallel { border-left: 3px solid var(--line); padding-left: 0.4rem; }
.step { flex: 1 1 14rem; border: 1px solid var(--line); border-radius: 6px; padding: 0.3rem 0.5rem; }
.step.done { border-color: var(--ok); }
.attempts { display: flex; flex-wrap: wrap; gap: 0.2rem; margin-top: 0.2rem; }
.a { display: inline-block; min-width: 1.6rem; padding: 0 0.3rem; border-radius: 4px; color: #fff;
     text-align: center; cursor: pointer; font-size: 0.85rem; border: 0; }
.a.passed { background: var(--ok); } .a.failed { background: var(--bad); }
.a.running { background: var(--run); } .a.interrupted { background: var(--muted); }
#detail { white-space: pre-wrap; background: #f6f8fa; padding: 0.4rem; border-radius: 6px; }
#detail:empty { display: none; }
pre { white-space: pre-wrap; word-break: break-word; background: #f6f8fa; padding: 0.5rem; border-radius: 6px;
      max-height: 24rem; overflow: auto; }
#output:empty { display: none; }
#output { font: 12px/1.35 ui-monospace, monospace; }
#events { font: 12px/1.35 ui-monospace, monospace; max-height: 20rem; overflow: auto; white-space: pre-wrap;
          word-break: break-all; background: #f6f8fa; padding: 0.4rem; border-radius: 6px; }
.controls { display: flex; flex-wrap: wrap; gap: 0.5rem; align-items: flex-start; }
.controls textarea { width: 100%; min-height: 3rem; }
button { font: inherit; padding: 0.25rem 0.7rem; }
#control-result:empty { display: none; }
#control-result { font-family: ui-monospace, monospace; padding: 0.3rem; border-radius: 4px;
                  background: #f6f8fa; }
svg { width: 100%; max-width: 40rem; height: auto; }
body, li, pre { overflow-wrap: anywhere; }
#runs th, #runs td { overflow-wrap: normal; }
#runs td .muted { overflow-wrap: anywhere; }
#runs td[data-label="status"] { min-width: 10rem; }
@media (max-width: 40rem) {
  #runs thead { display: none; }
  #runs tr { display: block; border-bottom: 1px solid var(--line); padding: 0.3rem 0; }
  #runs td { display: block; border: 0; padding: 0.05rem 0; overflow-wrap: anywhere; }
  #runs td[data-label]::before { content: attr(data-label) ": "; color: var(--muted); }
}
@media (max-width: 40rem) { .wide { display: none; } body { padding: 0.5rem; } }
"""

JS = """
'use strict';
const page = document.body.dataset;
const token = page.token;
const events = document.getElementById('events');
const timeline = document.getElementById('timeline');
const detail = document.getElementById('detail');
const result = document.getElementById('control-result');

const waveOf = {};

function stepBox(id, title) {
  let box = timeline.querySelector('[data-step="' + CSS.escape(id) + '"]');
  if (!box) {
    const wave = waveOf[id] || document.createElement('div');
    if (!waveOf[id]) wave.className = 'wave';
    box = document.createElement('div');
    box.className = 'step';
    box.dataset.step = id;
    const name = document.createElement('div');
    name.className = 'name';
    name.textContent = id + (title ? ' ' + title : '');
    const attempts = document.createElement('div');
    attempts.className = 'attempts';
    box.append(name, attempts);
    wave.append(box);
    if (!wave.parentNode) timeline.append(wave);
  } else if (title) {
    box.querySelector('.name').textContent = id + ' ' + title;
  }
  return box;
}

function lastChip(id) {
  const chips = stepBox(id).querySelectorAll('.a');
  return chips.length ? chips[chips.length - 1] : null;
}

function apply(event) {
  const id = event.step_id, data = event.data || {};
  if (event.type === 'wave_started') {  // its steps side by side, as the page draws a wave
    const wave = document.createElement('div');
    wave.className = 'wave parallel';
    for (const member of data.steps || []) {
      const box = timeline.querySelector('[data-step="' + CSS.escape(String(member)) + '"]');
      if (!box) { waveOf[member] = wave; continue; }
      const old = box.parentNode;
      if (!wave.parentNode) timeline.insertBefore(wave, old);
      wave.append(box);
      if (!old.childElementCount) old.remove();
    }
  }
  if (event.type === 'step_started' && id) stepBox(id, data.title || '');
  if (event.type === 'attempt_started' && id) {
    const chip = document.createElement('button');
    chip.className = 'a running';
    chip.textContent = data.attempt || '?';
    chip.dataset.head = 'step ' + id + ' attempt ' + (data.attempt || '?') +
      ' (iteration ' + event.iteration + ')';
    chip.dataset.start = event.ts;
    chip.dataset.d = chip.dataset.head + ': running';
    stepBox(id).querySelector('.attempts').append(chip);
  }
  if ((event.type === 'evaluation' || event.type === 'attempt_interrupted') && id) {
    const chip = lastChip(id);
    if (chip) {
      const outcome = event.type === 'attempt_interrupted' ? 'interrupted'
        : (data.complete ? 'passed' : 'failed');
      chip.className = 'a ' + outcome;
      const took = (Date.parse(event.ts) - Date.parse(chip.dataset.start)) / 1000;
      chip.dataset.d = chip.dataset.head + ': ' + outcome +
        (isNaN(took) ? '' : '\\ntook ' + (took < 10 ? took.toFixed(1) : Math.round(took)) + 's') +
        ((data.reasons || []).length ? '\\n' + data.reasons.join('\\n') : '');
    }
  }
  if (event.type === 'reflection_generated' && id) {
    const chip = lastChip(id);
    if (chip && data.suggestion) chip.dataset.d += '\\nreflection: ' + data.suggestion;
  }
  if (event.type === 'review' && id) {
    const chip = lastChip(id);
    if (chip) chip.dataset.d += '\\nreview: ' + data.verdict;
    if (chip && data.verdict === 'changes') chip.className = 'a failed';
  }
  if (event.type === 'step_completed' && id) stepBox(id).classList.add('done');
  if (event.type === 'llm_call') {
    const last = chartPoints().slice(-1)[0] || [0, 0, 0];
    const spent = (data.prompt_tokens || 0) + (data.completion_tokens || 0);
    usageAt(event.ts, last[1] + spent, last[2] + (data.cost_usd || 0), false);
  }
  const ends = event.type === 'stop_condition' || event.type.startsWith('loop_');
  if (data.status && ends) setStatus(data.status);
  if (event.type === 'loop_completed') setStatus('completed');
}

// The chart again, as chart.py draws it: x over the run's time, each line against its own top.
const chart = document.getElementById('usage-chart');
const W = 600, H = 180, PAD = 30;

function chartPoints() {
  return chart ? JSON.parse(chart.dataset.points || '[]') : [];
}

function usageAt(ts, tokens, cost, totals) {
  if (!chart) return;
  const points = chartPoints();
  const at = (Date.parse(ts) - Date.parse(chart.dataset.start)) / 1000;
  if (isNaN(at)) return;
  const now = points.pop();  // the page's "now" point moves on
  const last = points.length ? points[points.length - 1] : [0, 0, 0];
  if (!totals || tokens !== last[1] || cost !== last[2]) points.push([Math.max(at, last[0]), tokens, cost]);
  const end = points[points.length - 1];
  points.push([Math.max(at, end[0], now ? now[0] : 0), end[1], end[2]]);
  chart.dataset.points = JSON.stringify(points);
  const span = Math.max(points[points.length - 1][0], 1);
  const lines = [['cost', 2, chart.dataset.maxCost], ['tokens', 1, chart.dataset.maxTokens]];
  for (const [name, index, cap] of lines) {
    const top = Math.max(...points.map((p) => p[index]), Number(cap || 0), 1e-9);
    const line = chart.querySelector('polyline.' + name);
    const y = (value) => (H - PAD - (H - 2 * PAD) * value / top).toFixed(1);
    const x = (seconds) => (PAD + (W - PAD - 5) * seconds / span).toFixed(1);
    line.setAttribute('points', points.map((p) => x(p[0]) + ',' + y(p[index])).join(' '));
    const budget = chart.querySelector('.budget-' + name);
    if (budget && cap) {
      budget.setAttribute('y1', y(Number(cap)));
      budget.setAttribute('y2', y(Number(cap)));
    }
  }
  chart.querySelector('.usage-label').textContent =
    '$' + end[2].toFixed(4) + ', ' + end[1].toLocaleString('en-US') + ' tokens';
}

function setStatus(status) {
  const shown = document.getElementById('status');
  if (shown) { shown.textContent = status; shown.className = 'status status-' + status; }
}

if (timeline) {
  timeline.addEventListener('click', (e) => {
    const chip = e.target.closest('.a');
    if (chip) detail.textContent = chip.dataset.d || '';
  });
}

if (page.stream) {
  const source = new EventSource(page.stream);
  source.addEventListener('akira', (message) => {
    const item = JSON.parse(message.data);
    apply(item.event);
    const line = document.createElement('div');
    line.textContent = item.line;
    events.append(line);
    while (events.childElementCount > 500) events.firstElementChild.remove();
    events.scrollTop = events.scrollHeight;
  });
  source.addEventListener('output', (message) => {
    const said = JSON.parse(message.data);
    const head = document.getElementById('output-head');
    const shown = document.getElementById('output');
    if (!head || !shown) return;
    head.textContent = said.command === null ? 'no command ran yet'
      : '$ ' + said.command + (said.ended ? ' (ended)' : ' (running)')
        + (said.slot === null || said.slot === undefined ? '' : ' in wave slot ' + said.slot);
    shown.textContent = said.lines.join('\\n');
  });
  source.addEventListener('facts', (message) => {
    const said = JSON.parse(message.data);
    const shown = document.getElementById('facts');
    if (shown) shown.outerHTML = said.html;
    if (said.usage) usageAt(said.usage.ts, said.usage.tokens, said.usage.cost_usd, true);
  });
}

async function control(action, body, question) {
  if (!window.confirm(question)) return;
  result.textContent = '…';
  try {
    const reply = await fetch(page.controls + '/' + action, {
      method: 'POST',
      headers: {'Content-Type': 'application/json', 'X-Akira-Token': token},
      body: JSON.stringify(body),
    });
    const said = await reply.json();
    result.textContent = said.line;
    if (said.status) setStatus(said.status);
  } catch (err) {
    result.textContent = 'akira: error: the page could not reach akira web (' + err + ')';
  }
}

for (const button of document.querySelectorAll('[data-action]')) {
  button.addEventListener('click', () => {
    const action = button.dataset.action, run = page.task;
    if (action === 'stop') control('stop', {}, 'Stop ' + run + ' at its next safe point?');
    if (action === 'cancel') control('cancel', {}, 'Cancel ' + run + ' for good?');
    if (action === 'resume') {
      const guidance = document.getElementById('guidance').value;
      const asked = 'Resume ' + run + (guidance ? ' with this guidance?' : '?');
      control('resume', guidance ? {guidance} : {}, asked);
    }
    if (action === 'undo') {
      const step = document.getElementById('undo-step').value;
      control('undo', {step}, 'Undo step ' + step + ' and every later step of ' + run + ' (git reverts)?');
    }
  });
}
"""
