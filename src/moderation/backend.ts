import { fileURLToPath } from "node:url";
import * as tf from "@tensorflow/tfjs";
import { setWasmPaths } from "@tensorflow/tfjs-backend-wasm";

// Held in a variable so the compiler does not try to resolve it: tfjs-node is optional
// (its install script downloads a native binary, which is not always possible).
const TFJS_NODE = "@tensorflow/tfjs-node";

/** The single place that picks the tfjs backend: native tfjs-node when installed, else wasm. */
export async function initBackend(): Promise<void> {
  try {
    await import(TFJS_NODE); // registers the "tensorflow" backend as a side effect
    if (await tf.setBackend("tensorflow")) return;
  } catch {
    // Not installed or its native binding failed to load: wasm is the portable fallback.
  }
  // Load the .wasm files shipped inside the package, never from a CDN.
  setWasmPaths(fileURLToPath(new URL(".", import.meta.resolve("@tensorflow/tfjs-backend-wasm"))));
  if (!(await tf.setBackend("wasm"))) throw new Error("tfjs wasm backend failed to initialise");
}
