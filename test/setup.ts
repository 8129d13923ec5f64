import { setDefaultTimeout } from 'bun:test'

// Tests start real servers, load the real NSFW model and drive a real browser: give them room.
// (bunfig.toml has no default-timeout key; a preload that sets it covers tests and hooks alike.)
setDefaultTimeout(60_000)
