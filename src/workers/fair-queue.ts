/**
 * The waiting jobs, taken in turns between their owners (start-time fair queuing with one unit per job): a job's tag is
 * the later of the tag of the job that started last and the tag after its owner's previous job, and the lowest tag
 * starts first (the earliest added among equals). So an owner with many jobs waiting gets one start per turn, and a
 * newcomer's job starts at the next turn, ahead of the rest of the others' backlog; an owner gains no credit by idling.
 * The owners' last tags are forgotten once nothing of theirs is ahead of the turn. Linear in the queue, which the
 * pool bounds (maxQueue).
 */
export function createFairQueue<J extends { owner: string; tag: number }>() {
  const waiting: J[] = []
  /** The tag after each owner's latest job, while it is ahead of `turn`. */
  const next = new Map<string, number>()
  /** The tag of the job that started last. */
  let turn = 0
  return {
    get size() {
      return waiting.length
    },
    add(job: J) {
      job.tag = Math.max(turn, next.get(job.owner) ?? 0)
      next.set(job.owner, job.tag + 1)
      waiting.push(job)
    },
    take(): J | undefined {
      let best = -1
      for (let i = 0; i < waiting.length; i++) if (best < 0 || waiting[i]!.tag < waiting[best]!.tag) best = i
      if (best < 0) return undefined
      const [job] = waiting.splice(best, 1)
      turn = job!.tag
      for (const [owner, tag] of next) if (tag <= turn) next.delete(owner)
      return job
    },
    /** Takes a job out whose caller stopped waiting; false when it is not waiting (it started, or is gone). */
    remove(job: J): boolean {
      const at = waiting.indexOf(job)
      if (at < 0) return false
      waiting.splice(at, 1)
      return true
    },
    drain: () => waiting.splice(0),
  }
}
