// Reference: the MobileNetV2 classifier alone, in its Worker (the service's own classifier module), classifying
// `count` 224x224 inputs one after another. Usage: bun bench/ref/classify.ts <count>
import { createNsfwClassifier } from '../../src/moderation'
import { IMAGE_BYTES } from '../../src/moderation/protocol'
import { percentile } from '../lib/stats'

const count = Number(process.argv[2] ?? 30)
const classifier = createNsfwClassifier({ timeoutMs: 60_000, maxQueue: 64 })
const t0 = performance.now()
await classifier.warm()
const warmMs = performance.now() - t0
// Made beforehand, so the CPU counted below is the classifier's alone.
const inputs = Array.from({ length: count }, (_, i) => {
  const input = new Uint8Array(IMAGE_BYTES)
  for (let j = 0; j < input.length; j++) input[j] = (j * 31 + i * 17) & 0xff
  return input
})
const latencies: number[] = []
const cpu0 = process.cpuUsage()
for (const input of inputs) {
  const t = performance.now()
  await classifier.classify(input)
  latencies.push(performance.now() - t)
}
const cpu = process.cpuUsage(cpu0)
await classifier.close()
// CPU per classification: this process's threads, the model's Worker included.
const cpuMs = (cpu.user + cpu.system) / 1000 / count
console.log(
  JSON.stringify({
    warmMs,
    count,
    latencies,
    cpuMs,
    p50Ms: percentile(latencies, 50),
    p95Ms: percentile(latencies, 95),
  }),
)
