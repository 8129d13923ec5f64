import { loadConfig } from '../src/config'
import { createNsfwClassifier, type NsfwClassifier } from '../src/moderation'

let shared: NsfwClassifier | undefined

/**
 * The real nsfwjs model, loaded once per `bun test` run (every test file runs in one process) and shared by the tests
 * about scanning. Created on first use, so a run without those tests never loads it.
 *
 * Pinned to wasm (NSFW_BACKEND=wasm): that is the backend every install can run, so it stays the one tested even on
 * a machine where tfjs-node is installed. The server's limits are its defaults.
 *
 * close() is a no-op: each test server closes its classifier on stop(), which must not end the model for the next
 * file. It is never really closed: an afterAll belongs to one file and none knows it is the last, and `bun test`
 * exits when the run ends whatever workers are alive (the OS takes the worker with the process).
 */
export function sharedClassifier(): NsfwClassifier {
  if (!shared) {
    const { timeoutMs, maxQueue, backend } = loadConfig({ NSFW_BACKEND: 'wasm' }).nsfw
    const real = createNsfwClassifier({ timeoutMs, maxQueue, backend })
    shared = {
      classify: (rgb) => real.classify(rgb),
      warm: () => real.warm(),
      close: async () => {},
      get queueDepth() {
        return real.queueDepth
      },
      get backend() {
        return real.backend
      },
      get state() {
        return real.state
      },
    }
  }
  return shared
}
