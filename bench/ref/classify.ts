// Reference: the nsfwjs MobileNetV2 classifier alone, in its Worker (the service's own classifier module), classifying
// `count` 224x224 inputs one after another. Usage: bun bench/ref/classify.ts <count>
import { createNsfwClassifier } from '../../src/moderation'
import { IMAGE_BYTES } from '../../src/moderation/protocol'
import { percentile } from '../lib/stats'

const count = Number(process.argv[2] ?? 30)
const classifier = createNsfwClassifier({ timeoutMs: 60_000, maxQueue: 64 })
const t0 = performance.now()
await classifier.warm()
const warmMs = performance.now() - t0
const input = new Uint8Array(IMAGE_BYTES)
const latencies: number[] = []
for (let i = 0; i < count; i++) {
  for (let j = 0; j < input.length; j++) input[j] = (j * 31 + i * 17) & 0xff
  const t = performance.now()
  await classifier.classify(input.slice())
  latencies.push(performance.now() - t)
}
await classifier.close()
console.log(
  JSON.stringify({ warmMs, count, latencies, p50Ms: percentile(latencies, 50), p95Ms: percentile(latencies, 95) }),
)
