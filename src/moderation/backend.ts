import { setWasmPaths } from '@tensorflow/tfjs-backend-wasm'
// `type: "file"` gives the path of the installed file, or of its copy embedded in the single binary.
import wasmPlain from '@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm.wasm' with { type: 'file' }
import wasmSimd from '@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm-simd.wasm' with { type: 'file' }
import wasmThreadedSimd from '@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm-threaded-simd.wasm' with {
  type: 'file',
}
import * as tf from '@tensorflow/tfjs-core'

// Held in a variable so the compiler does not try to resolve it: tfjs-node is optional
// (its install script downloads a native binary, which is not always possible).
const TFJS_NODE = '@tensorflow/tfjs-node'

/** What the operator asks for (NSFW_BACKEND): native tfjs-node when it loads, or wasm regardless. */
export type BackendChoice = 'auto' | 'wasm'
/** The tfjs backend actually running the model ("tensorflow" is the name tfjs-node registers). */
export type BackendName = 'tensorflow' | 'wasm'

/** The single place that picks the tfjs backend: native tfjs-node when allowed and importable, else wasm. */
export async function initBackend(choice: BackendChoice = 'auto'): Promise<BackendName> {
  if (choice === 'auto') {
    try {
      await import(TFJS_NODE) // registers the "tensorflow" backend as a side effect
      if (await tf.setBackend('tensorflow')) return 'tensorflow'
    } catch {
      // Not installed or its native binding failed to load: wasm is the portable fallback.
    }
  }
  // Load the .wasm files shipped inside the package, never from a CDN.
  setWasmPaths({
    'tfjs-backend-wasm.wasm': wasmPlain,
    'tfjs-backend-wasm-simd.wasm': wasmSimd,
    'tfjs-backend-wasm-threaded-simd.wasm': wasmThreadedSimd,
  })
  if (!(await tf.setBackend('wasm'))) throw new Error('tfjs wasm backend failed to initialise')
  return 'wasm'
}
