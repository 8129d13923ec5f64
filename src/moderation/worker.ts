/** The classifier's Worker thread (classifier.ts): loads the model on the pool's setup (the backend choice), then scores. */
import { serveJobs } from '../workers/serve'
import { type BackendChoice, initBackend } from './backend'
import { loadNsfwModel, scoreNsfw } from './nsfw-model'
import { IMAGE_BYTES, type ModelLoaded } from './protocol'

serveJobs(async (choice: BackendChoice) => {
  const t0 = performance.now()
  const backend = await initBackend(choice)
  const model = await loadNsfwModel()
  // One dummy inference through the same path real jobs take, so the first job does not pay for kernel setup.
  await scoreNsfw(model, new Uint8Array(IMAGE_BYTES))
  const info: ModelLoaded = { backend, loadMs: Math.round(performance.now() - t0) }
  return { info, jobs: { classify: (rgb: Uint8Array) => scoreNsfw(model, rgb) } }
})
