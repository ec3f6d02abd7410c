// What every view shares: Preact with htm, live data, formatting.
import {html, useEffect, useRef, useState} from './vendor/preact-htm.js';
import {followEvents} from './api.js';

export {html, useEffect, useRef, useState};
export {Component, render, useCallback, useMemo} from './vendor/preact-htm.js';

// --- live updates: one long poll of /v1/events for the page, fanned out to the views ---
const listeners = new Set();
let stopFollowing = null;

export function startLive() {
  if (stopFollowing) return;
  stopFollowing = followEvents((events) => listeners.forEach((fn) => fn(events)));
}

export function stopLive() {
  if (stopFollowing) stopFollowing();
  stopFollowing = null;
}

export function onEvents(fn) {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

// Runs `load()` now, again `batchMs` after events arrive (the events of that time batched into
// one reload), and every `everyMs` (for what changes without events: GPU utilization,
// heartbeats). Returns {data, error, reload}; the last good data stays shown while a reload
// fails.
export function useLive(load, deps, {everyMs = 5000, batchMs = 250, when = () => true} = {}) {
  const [state, setState] = useState({data: null, error: null});
  const loadRef = useRef(load);
  loadRef.current = load;
  const whenRef = useRef(when);
  whenRef.current = when;
  useEffect(() => {
    let alive = true;
    let timer = null;
    let running = false;
    let again = false;
    const run = async () => {
      if (running) {
        again = true;
        return;
      }
      running = true;
      try {
        const data = await loadRef.current();
        if (alive) setState({data, error: null});
      } catch (error) {
        if (alive) setState((s) => ({data: s.data, error}));
      }
      running = false;
      if (again && alive) {
        again = false;
        run();
      }
    };
    run();
    const off = onEvents((events) => {
      if (!whenRef.current(events) || timer) return;
      timer = setTimeout(() => {
        timer = null;
        run();
      }, batchMs);
    });
    const every = everyMs > 0 ? setInterval(run, everyMs) : null;
    return () => {
      alive = false;
      off();
      if (timer) clearTimeout(timer);
      if (every) clearInterval(every);
    };
  }, deps);
  return {...state, reload: () => loadRef.current().then((data) => setState({data, error: null}))};
}

// --- formatting ---
export function ago(iso, now = Date.now()) {
  if (!iso) return '';
  return span(Math.max(0, now - Date.parse(iso)) / 1000) + ' ago';
}

export function until(iso, now = Date.now()) {
  if (!iso) return '';
  const s = (Date.parse(iso) - now) / 1000;
  return s <= 0 ? 'now' : 'in ' + span(s);
}

export function span(seconds) {
  const s = Math.round(seconds);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
  return `${Math.floor(s / 86400)}d ${Math.floor((s % 86400) / 3600)}h`;
}

export function time(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  return d.toLocaleString(undefined, {hour12: false});
}

export function gpus(n) {
  if (n === null || n === undefined) return '';
  return Number.isInteger(n) ? String(n) : n.toFixed(2).replace(/0+$/, '');
}

export function percent(x) {
  return x === null || x === undefined ? '–' : `${Math.round(x)}%`;
}

export function ErrorLine({error}) {
  if (!error) return null;
  return html`<p class="error" role="alert">${error.message}</p>`;
}

export function StateBadge({state}) {
  return html`<span class="badge state-${state}">${state}</span>`;
}

export function JobLink({id, children}) {
  return html`<a href=${'#/jobs/' + id}>${children || 'job ' + id}</a>`;
}

// A stable colour for a job id or a name (the GPU map, legends); remembered, since the map
// asks once per GPU and parsing a new colour string per cell is most of drawing 80,000.
const colours = new Map();
export function colourOf(key) {
  const known = colours.get(key);
  if (known) return known;
  if (colours.size > 200000) colours.clear();
  const c = hue(key);
  colours.set(key, c);
  return c;
}

function hue(key) {
  return `hsl(${hueOf(key)} 65% 52%)`;
}

// The hue (0..359) of colourOf(key), for drawing into pixels without parsing a colour string.
export function hueOf(key) {
  let h = 2166136261;
  const s = String(key);
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return ((h >>> 0) % 360 + 360) % 360;
}
