// Runs SQLite's WAL checkpoints on a connection of its own, off the main thread (src/db/checkpointer.ts).
import { Database } from "bun:sqlite";
import type { CheckpointRequest, CheckpointMessage } from "./checkpointer";

declare const self: Worker;

let db: Database | undefined;
let timer: ReturnType<typeof setInterval> | undefined;

function post(message: CheckpointMessage): void {
  self.postMessage(message);
}

/** PASSIVE: copies what it can without waiting on any reader or writer, so it never holds up the server's connection. */
function checkpoint(): void {
  try {
    db?.exec("PRAGMA wal_checkpoint(PASSIVE)");
  } catch (err) {
    post({ type: "failed", message: String(err) });
  }
}

self.onmessage = (event: MessageEvent<CheckpointRequest>) => {
  const msg = event.data;
  if (msg.type === "start") {
    try {
      db = new Database(msg.path);
      timer = setInterval(checkpoint, msg.intervalMs);
      post({ type: "started" });
    } catch (err) {
      post({ type: "failed", message: String(err) });
    }
    return;
  }
  clearInterval(timer);
  checkpoint();
  db?.close();
  post({ type: "stopped" });
};
