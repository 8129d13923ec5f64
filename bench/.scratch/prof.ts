// Scratch: self and inclusive time per function from a .cpuprofile, only for samples after `skipSeconds`.
const [file, skipArg] = process.argv.slice(2)
const prof = await Bun.file(file).json()
const nodes = new Map<number, any>(prof.nodes.map((n: any) => [n.id, n]))
const parent = new Map<number, number>()
for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
let t = prof.startTime
const skip = prof.startTime + Number(skipArg) * 1e6
const self = new Map<string, number>()
const incl = new Map<string, number>()
let total = 0
prof.samples.forEach((id: number, i: number) => {
  const dt = prof.timeDeltas[i]
  t += dt
  if (t < skip) return
  total += dt
  const n = nodes.get(id)
  const name = (n: any) => `${n.callFrame.functionName || '(anon)'} ${n.callFrame.url.replace('/work/main/', '')}:${n.callFrame.lineNumber}`
  self.set(name(n), (self.get(name(n)) ?? 0) + dt)
  const seen = new Set<string>()
  for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
    const k = name(nodes.get(cur))
    if (seen.has(k)) continue
    seen.add(k)
    incl.set(k, (incl.get(k) ?? 0) + dt)
  }
})
const top = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]).slice(0, 30).map(([k, v]) => `${((v / total) * 100).toFixed(1).padStart(5)}%  ${k}`).join('\n')
console.log(`total ${(total / 1e6).toFixed(2)} s\n-- self\n${top(self)}\n-- inclusive\n${top(incl)}`)
