/** Messages exchanged between the classifier (main thread) and its model worker. */

export const IMAGE_SIDE = 224;
export const IMAGE_BYTES = IMAGE_SIDE * IMAGE_SIDE * 3;

export interface NsfwScores {
  Porn: number;
  Hentai: number;
  Sexy: number;
  Neutral: number;
  Drawing: number;
}

export interface JobRequest {
  id: number;
  rgb: Uint8Array;
}

export type WorkerMessage =
  | { type: "ready" }
  | { type: "fatal"; message: string }
  | { type: "result"; id: number; scores: NsfwScores }
  | { type: "error"; id: number; message: string };
