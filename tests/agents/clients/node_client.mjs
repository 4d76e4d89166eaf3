// One synthesis against this platform through a Node SDK, unchanged (tests/agents, bench/bench_agents.py).
//
//   node tests/agents/clients/node_client.mjs --sdk elevenlabs|openai --url http://127.0.0.1:8000 \
//     --key tts_... --voice joe --text "Hello." [--out audio.pcm]
//
// The SDKs come from var/agents/node (tests/agents/install.sh; NODE_PATH is not needed, the
// modules are resolved from there). `elevenlabs` is @elevenlabs/elevenlabs-js's
// textToSpeech.streamWithTimestamps (POST /v1/text-to-speech/{voice}/stream/with-timestamps,
// pcm_16000): its word times are the characters' times, which run from the start of the request.
// `openai` is the openai SDK's audio.speech.create (POST /v1/audio/speech, pcm at 24 kHz).
// Prints one JSON line: audio bytes, sample rate, seconds, words, time to first audio, errors.
import { writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const modules = resolve(process.env.AGENTS_NODE_DIR || resolve(here, "../../../var/agents/node"), "package.json");
const require = createRequire(modules);

function parseArgs(argv) {
  const args = { voice: "joe", model: "eleven_flash_v2_5" };
  for (let i = 0; i < argv.length; i += 2) args[argv[i].replace(/^--/, "")] = argv[i + 1];
  return args;
}

// Words from ElevenLabs' character alignment: each word starts at its first character.
function wordsOf(chars, starts) {
  const words = [];
  let word = "";
  let start = 0;
  chars.forEach((c, i) => {
    if (c.trim() === "") {
      if (word) words.push([word, start]);
      word = "";
    } else {
      if (!word) start = starts[i];
      word += c;
    }
  });
  if (word) words.push([word, start]);
  return words;
}

async function elevenlabs(args, result, pieces) {
  const { ElevenLabsClient } = require("@elevenlabs/elevenlabs-js");
  const client = new ElevenLabsClient({ apiKey: args.key, baseUrl: args.url });
  const chars = [];
  const starts = [];
  const began = performance.now();
  const stream = await client.textToSpeech.streamWithTimestamps(args.voice, {
    text: args.text,
    modelId: args.model,
    outputFormat: "pcm_16000",
  });
  for await (const chunk of stream) {
    if (chunk.audioBase64) {
      if (result.ttfa_s === null) result.ttfa_s = (performance.now() - began) / 1000;
      pieces.push(Buffer.from(chunk.audioBase64, "base64"));
    }
    if (chunk.alignment) {
      chars.push(...chunk.alignment.characters);
      starts.push(...chunk.alignment.characterStartTimesSeconds);
    }
  }
  result.sample_rate = 16000;
  result.words = wordsOf(chars, starts);
}

async function openai(args, result, pieces) {
  const { default: OpenAI } = require("openai");
  const client = new OpenAI({ apiKey: args.key, baseURL: `${args.url}/v1` });
  const began = performance.now();
  const response = await client.audio.speech.create({
    model: "tts-1",
    voice: args.voice,
    input: args.text,
    response_format: "pcm",
  });
  for await (const chunk of response.body) {
    if (result.ttfa_s === null) result.ttfa_s = (performance.now() - began) / 1000;
    pieces.push(Buffer.from(chunk));
  }
  result.sample_rate = 24000;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const result = { client: `node-${args.sdk}`, audio_bytes: 0, sample_rate: 0, seconds: 0, words: [], ttfa_s: null, final: false, errors: [] };
  const pieces = [];
  try {
    await (args.sdk === "openai" ? openai : elevenlabs)(args, result, pieces);
    result.final = true;
  } catch (err) {
    result.errors.push(`${err.name}: ${err.message}`);
  }
  const audio = Buffer.concat(pieces);
  if (args.out) writeFileSync(args.out, audio);
  result.audio_bytes = audio.length;
  result.seconds = result.sample_rate ? audio.length / 2 / result.sample_rate : 0;
  console.log(JSON.stringify(result));
  process.exit(result.errors.length ? 1 : 0);
}

main();
