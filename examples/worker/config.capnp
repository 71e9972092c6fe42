# workerd config for the worker example: `npx workerd serve examples/worker/config.capnp`
# (after `npm run build`). Listens on 127.0.0.1:8787 only.
using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [ (name = "main", worker = .decodeWorker) ],
  sockets = [ (name = "http", address = "127.0.0.1:8787", http = (), service = "main") ],
);

const decodeWorker :Workerd.Worker = (
  modules = [
    (name = "worker.js", esModule = embed "worker.js"),
    (name = "decode-step.js", esModule = embed "../decode-step.js"),
    # the package's workerd entry and the .wasm builds it imports as modules
    (name = "edgekernels", esModule = embed "../../dist/workerd.js"),
    (name = "edgekernels.wasm", wasm = embed "../../dist/edgekernels.wasm"),
    (name = "edgekernels.scalar.wasm", wasm = embed "../../dist/edgekernels.scalar.wasm"),
    (name = "edgekernels.relaxed.wasm", wasm = embed "../../dist/edgekernels.relaxed.wasm"),
  ],
  compatibilityDate = "2025-01-01",
);
