// The dashboard's only way to the controller: its public REST API, with the user's bearer
// token. The token lives in sessionStorage (gone when the tab closes), never in a URL.

const kTokenKey = 'gangway.token';

export function token() {
  return sessionStorage.getItem(kTokenKey) || '';
}

export function setToken(value) {
  if (value) sessionStorage.setItem(kTokenKey, value);
  else sessionStorage.removeItem(kTokenKey);
}

// An answer other than 2xx: the API's error, its field and HTTP status.
export class ApiError extends Error {
  constructor(status, message, field) {
    super(message);
    this.status = status;
    this.field = field || '';
  }
}

const signOutListeners = new Set();
export function onSignedOut(fn) {
  signOutListeners.add(fn);
  return () => signOutListeners.delete(fn);
}

// GET (or POST with `body`) a /v1 path; resolves with the JSON answer, or text for `text`.
export async function api(path, {method = 'GET', body, text = false, signal} = {}) {
  const headers = {Authorization: `Bearer ${token()}`};
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    signal,
    cache: 'no-store',
  });
  if (!res.ok) {
    let message = `${res.status} ${res.statusText}`;
    let field = '';
    try {
      const err = (await res.json()).error;
      if (err && err.message) message = err.message;
      if (err && err.field) field = err.field;
    } catch (_) {
      // not JSON: keep the status line
    }
    if (res.status === 401) {
      setToken('');
      signOutListeners.forEach((fn) => fn(message));
    }
    throw new ApiError(res.status, message, field);
  }
  if (text) return {text: await res.text(), headers: res.headers};
  return res.json();
}

// Follows GET /v1/events by long polling from the newest event on, calling onEvents(list) with
// each batch the caller may see. Returns a function that stops it. An answer that comes back
// empty at once (a standby does not wait) or an error waits a second before the next poll.
export function followEvents(onEvents, {waitMs = 25000} = {}) {
  let stopped = false;
  let controller = null;
  const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  (async () => {
    let after = null;
    while (!stopped) {
      const started = Date.now();
      controller = new AbortController();
      try {
        if (after === null) {
          const first = await api('/v1/events?last=1', {signal: controller.signal});
          after = first.next || 0;
          continue;
        }
        const page = await api(`/v1/events?after=${after}&waitMs=${waitMs}&limit=1000`,
                               {signal: controller.signal});
        after = page.next ?? after;
        if (page.events.length > 0) onEvents(page.events);
        else if (Date.now() - started < 1000) await pause(1000);
      } catch (e) {
        if (stopped) return;
        if (e instanceof ApiError && e.status === 401) return;
        await pause(1000);
      }
    }
  })();
  return () => {
    stopped = true;
    if (controller) controller.abort();
  };
}
