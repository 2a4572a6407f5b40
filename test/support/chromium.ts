// Headless Debian Chromium as every browser test starts it: no GPU, no sandbox (root), and none of the background
// networking that would flood this closed network with refused connections.
export const CHROMIUM = '/usr/bin/chromium';

export const HEADLESS_CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
] as const;
