# workerd config for the runtime tests (test/runtimes/run.mjs starts it with
# --socket-addr http=127.0.0.1:<port>). Module names mirror how a bundle would be laid
# out: the package is "edgekernels", its .wasm builds sit beside it as wasm modules.
using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [ (name = "main", worker = .tests) ],
  sockets = [ (name = "http", address = "127.0.0.1:8788", http = (), service = "main") ],
);

const tests :Workerd.Worker = (
  modules = [
    (name = "worker.js", esModule = embed "workerd-worker.mjs"),
    (name = "suite.mjs", esModule = embed "suite.mjs"),
    (name = "edgekernels", esModule = embed "../../dist/workerd.js"),
    (name = "edgekernels.wasm", wasm = embed "../../dist/edgekernels.wasm"),
    (name = "edgekernels.scalar.wasm", wasm = embed "../../dist/edgekernels.scalar.wasm"),
    (name = "edgekernels.relaxed.wasm", wasm = embed "../../dist/edgekernels.relaxed.wasm"),
  ],
  compatibilityDate = "2025-01-01",
);
