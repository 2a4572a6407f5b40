// @ts-check
// The dashboard pages' one script, run in the browser (checked by tsconfig.client.json and biome; the hub inlines it
// under the page's CSP nonce). Times become the viewer's zone with the offset; an open list asks for its rows again; an
// open task follows its event stream, appending events as text (never as HTML) and swapping in the parts the hub
// re-rendered. Continue's box is replaced only when the state changes, so a prompt being typed survives updates.

/** @param {number} n */
const pad = (n) => String(n).padStart(2, '0');

/** The viewer's offset from UTC, as `UTC+05:30`. */
const offset = () => {
  const m = -new Date().getTimezoneOffset();
  return `UTC${m < 0 ? '-' : '+'}${pad(Math.floor(Math.abs(m) / 60))}:${pad(Math.abs(m) % 60)}`;
};

/** @param {number} ms */
const age = (ms) => {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min`;
  if (s < 86400) return `${Math.floor(s / 3600)} h`;
  return `${Math.floor(s / 86400)} d`;
};

/**
 * Rewrites every `<time datetime>` under `root` in the viewer's zone: `age` as time since, `clock` as the time of day,
 * else the full date and time; the title holds the full form.
 * @param {ParentNode} root
 */
const localTimes = (root) => {
  for (const el of root.querySelectorAll('time[datetime]')) {
    if (!(el instanceof HTMLTimeElement)) continue;
    const d = new Date(el.getAttribute('datetime') ?? '');
    if (Number.isNaN(d.getTime())) continue;
    const clock = `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
    const day = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
    if (el.dataset.form === 'age') {
      el.textContent = age(Date.now() - d.getTime());
      el.title = `${day} ${clock} ${offset()}`;
    } else if (el.dataset.form === 'clock') {
      el.textContent = clock;
      el.title = `${day} ${clock} ${offset()}`;
    } else el.textContent = `${day} ${clock} ${offset()}`;
  }
};

for (const el of document.querySelectorAll('.offset')) el.textContent = offset();
localTimes(document);

const list = document.getElementById('list');
if (list?.dataset.refresh) {
  const url = list.dataset.refresh;
  const every = Number(list.dataset.every);
  const refresh = async () => {
    try {
      const r = await fetch(url, { cache: 'no-store', credentials: 'same-origin' });
      if (r.status === 401) {
        list.dataset.state = 'logged-out';
        return;
      }
      if (r.ok) {
        list.innerHTML = await r.text();
        localTimes(list);
        list.dataset.refreshed = String(Date.now());
      }
    } catch {
      // The hub is restarting or the network blinked: the next refresh tries again.
    }
    setTimeout(refresh, every);
  };
  setTimeout(refresh, every);
}

const events = document.getElementById('events');
if (events?.dataset.follow) {
  const note = /** @type {HTMLElement} */ (document.getElementById('stream'));
  const controls = /** @type {HTMLElement} */ (document.getElementById('controls'));
  const source = new EventSource(`${events.dataset.follow}?after=${encodeURIComponent(events.dataset.after ?? '')}`);
  source.addEventListener('task', (m) => {
    /** @type {{ seq: number, kind: string, state: string | null, time: string, head: string, text: string }} */
    const ev = JSON.parse(m.data);
    const li = document.createElement('li');
    li.dataset.seq = String(ev.seq);
    li.dataset.kind = ev.kind;
    li.dataset.state = ev.state || '';
    li.dataset.live = '1';
    const t = document.createElement('time');
    t.setAttribute('datetime', ev.time);
    t.dataset.form = 'clock';
    const head = document.createElement('span');
    head.className = 'head';
    head.textContent = ev.head;
    const text = document.createElement('span');
    text.className = 'text';
    text.textContent = ev.text;
    li.append(t, ' ', head, ' ', text);
    localTimes(li);
    events.appendChild(li);
  });
  source.addEventListener('view', (m) => {
    /** @type {Record<'state' | 'facts' | 'answer' | 'rounds' | 'controls', string>} */
    const v = JSON.parse(m.data);
    for (const id of /** @type {const} */ (['facts', 'answer', 'rounds'])) {
      const el = /** @type {HTMLElement} */ (document.getElementById(id));
      el.innerHTML = v[id];
      localTimes(el);
    }
    if (controls.dataset.state !== v.state) {
      controls.innerHTML = v.controls;
      controls.dataset.state = v.state;
    }
  });
  source.addEventListener('end', (m) => {
    source.close();
    note.textContent = `the task has ended (${JSON.parse(m.data).state})`;
  });
  source.onerror = () => {
    note.textContent = 'reconnecting…';
  };
  source.onopen = () => {
    note.textContent = 'following live events…';
  };
}
