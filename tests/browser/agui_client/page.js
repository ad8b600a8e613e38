// A page that talks to arknb's AG-UI server with the official client (@ag-ui/client),
// bundled by tests/browser/test_agui_client.py with esbuild and served from 127.0.0.1.
import { HttpAgent, buildResumeArray } from "@ag-ui/client";

const $ = (id) => document.getElementById(id);
const events = [];
window.aguiEvents = events;

const agent = new HttpAgent({ url: new URL("agent/", location.href).href, threadId: "browser-thread" });

const subscriber = {
  onEvent({ event }) {
    events.push(event);
  },
  onTextMessageStartEvent({ event }) {
    const bubble = document.createElement("p");
    bubble.className = "assistant";
    bubble.dataset.messageId = event.messageId;
    $("answers").append(bubble);
  },
  onTextMessageContentEvent({ event }) {
    const bubble = document.querySelector(`p[data-message-id="${CSS.escape(event.messageId)}"]`);
    bubble.textContent += event.delta;
    $("chunks").textContent = String(Number($("chunks").textContent) + 1);
  },
  onToolCallResultEvent({ event }) {
    const line = document.createElement("p");
    line.className = "tool-result";
    line.textContent = `tool ${event.toolCallId}: ${event.content}`;
    $("answers").append(line);
  },
  onRunFinishedEvent(params) {
    $("status").textContent = params.outcome;
    if (params.outcome === "interrupt") showInterrupts(params.interrupts);
  },
  onRunErrorEvent({ event }) {
    $("status").textContent = "error";
    $("error").textContent = `${event.code}: ${event.message}`;
  },
};

function showInterrupts(interrupts) {
  for (const interrupt of interrupts) {
    const card = document.createElement("div");
    card.className = "interrupt";
    card.dataset.id = interrupt.id;
    const text = document.createElement("p");
    text.textContent = interrupt.message;
    const args = document.createElement("pre");
    args.textContent = JSON.stringify(interrupt.metadata?.arknb?.arguments ?? {}, null, 1);
    const approve = document.createElement("button");
    approve.textContent = "Approve";
    approve.className = "approve";
    approve.onclick = async () => {
      card.remove();
      const resume = buildResumeArray(interrupts, {
        [interrupt.id]: { status: "resolved", payload: { approved: true } },
      });
      await run({ resume });
    };
    card.append(text, args, approve);
    $("interrupts").append(card);
  }
}

async function run(parameters) {
  $("status").textContent = "running";
  try {
    await agent.runAgent(parameters, subscriber);
  } catch (error) {
    $("status").textContent = "error";
    $("error").textContent = String(error);
  }
}

$("send").onclick = () => {
  agent.addMessage({ id: crypto.randomUUID(), role: "user", content: $("input").value });
  run({});
};
$("ready").textContent = "yes";
