#!/usr/bin/env python3
"""Plans a sublaunch launch from Python: the planner WebAssembly component, run by wasmtime-py.

    python plan.py PLANNER_WASM < request.json

reads one PlanRequest (JSON) on standard input and prints exactly what `sublaunch plan`
prints: the LaunchPlan (exit 0) or {"error": {"code", "message"}} (exit 1).
PLANNER_WASM is the component (`sublaunch component --out planner.wasm` writes it).

It uses wasmtime-py's native component API (no generated bindings): the component's
`plan-json` export takes and returns JSON text, so no WIT record is mapped by hand.

The guest is sandboxed like in the sublaunch host: it may import only wasi:io and wasi:cli
(std's panic messages), and its WASI context has no arguments, no environment, no
preopened directories, an empty stdin, and a stderr captured for error messages. A fuel
budget is each call's deadline and the store caps linear memory; a trap, the deadline or
the cap becomes {"error": {"code": "planner-fault", "message": "...which..."}}.

`--batch` (used by the tests) plans one request per input line and
writes one line per request: {"exit": 0|1, "output": "<what the single mode prints>"}.

`--session REGISTRY.json` plans in one `planner-session` holding that model registry (a JSON
array of availableModels entries): the registry crosses into the component once (its records
are the one thing mapped by hand), and a request without availableModels uses it.
"""

import json
import os
import sys
import tempfile

import wasmtime
from wasmtime import component

INTERFACE = "sublaunch:planner/planner@0.1.0"
ALLOWED_IMPORTS = ("wasi:io/", "wasi:cli/")
FUEL = 4_000_000_000  # units of fuel (about instructions) per call: a few seconds
MEMORY_BYTES = 256 * 1024 * 1024
STDERR_BYTES = 64 * 1024


def error_document(code, message):
    """`sublaunch plan`'s error output: two-space pretty JSON, keys in this order."""
    return json.dumps({"error": {"code": code, "message": message}}, indent=2, ensure_ascii=False)


class ModelEntry:
    """An availableModels entry (JSON) as the WIT record `model-entry`: wasmtime-py reads a
    record's fields as attributes named as in WIT (absent ones are none)."""

    FIELDS = {"provider": "provider", "id": "id", "name": "name", "reasoning": "reasoning",
              "thinking-levels": "thinkingLevels", "context-window": "contextWindow"}

    def __init__(self, entry):
        for wit_name, json_name in self.FIELDS.items():
            value = entry.get(json_name)
            if wit_name == "context-window" and value is not None:
                value = float(value)
            setattr(self, wit_name, value)


class Planner:
    """One compiled component and one instance, reused for every call until a fault.

    The planner keeps nothing between calls, so reusing the instance is safe and cheap; a
    host that wants every call in a fresh instance (as the sublaunch host does) calls
    `_instantiate()` before each call, for roughly half a millisecond more per call.
    """

    def __init__(self, wasm_path, fuel=FUEL, memory_bytes=MEMORY_BYTES, registry=None):
        config = wasmtime.Config()
        config.consume_fuel = True
        self.engine = wasmtime.Engine(config)
        self.component = component.Component.from_file(self.engine, wasm_path)
        imports = self.component.type.imports(self.engine)
        refused = [name for name in imports if not name.startswith(ALLOWED_IMPORTS)]
        if refused:
            raise ValueError(f"the planner component imports {', '.join(refused)}, which is not granted")
        self.linker = component.Linker(self.engine)
        self.linker.add_wasip2()  # only what the checked imports use is ever reached
        interface = self.component.get_export_index(INTERFACE)
        self.plan_json_export = self.component.get_export_index("plan-json", interface)
        # With a registry, every plan runs in one planner-session holding it: the registry
        # crosses into the component once, and a request without availableModels uses it.
        self.registry = None if registry is None else [ModelEntry(entry) for entry in registry]
        self.session_exports = (
            self.component.get_export_index("[constructor]planner-session", interface),
            self.component.get_export_index("[method]planner-session.plan-json", interface),
        )
        self.session = None
        self.fuel = fuel
        self.memory_bytes = memory_bytes
        self.func = None
        self.stderr = None

    def _instantiate(self):
        # No args, no env, no preopens, empty stdin, stdout discarded. The guest's stderr
        # goes to a private temporary file of ours (not to a Python callback, which the
        # runtime could call from its own threads while the interpreter shuts down).
        self.stderr = tempfile.NamedTemporaryFile(prefix="sublaunch-planner-stderr-")
        wasi = wasmtime.WasiConfig()
        wasi.stderr_file = self.stderr.name
        self.store = wasmtime.Store(self.engine)
        self.store.set_wasi(wasi)
        self.store.set_limits(memory_size=self.memory_bytes)
        self.store.set_fuel(self.fuel)
        instance = self.linker.instantiate(self.store, self.component)
        self.func = instance.get_func(self.store, self.plan_json_export)
        self.session = None
        if self.registry is not None:
            constructor = instance.get_func(self.store, self.session_exports[0])
            self.session = constructor(self.store, self.registry)
            constructor.post_return(self.store)
            self.func = instance.get_func(self.store, self.session_exports[1])

    def plan_json(self, request):
        """Plans one PlanRequest JSON text; returns (exit code, text to print)."""
        stderr_start = 0
        try:
            if self.func is None:
                self._instantiate()
            stderr_start = os.fstat(self.stderr.fileno()).st_size
            self.store.set_fuel(self.fuel)  # instantiation uses a little; refill per call
            args = (request,) if self.session is None else (self.session, request)
            result = self.func(self.store, *args)
            self.func.post_return(self.store)
        except wasmtime.WasmtimeError as error:  # a trap, the deadline or the memory cap
            self.func = None  # a trapped instance is not reused
            return 1, error_document("planner-fault", self._fault_message(error, stderr_start))
        if isinstance(result, str):  # result<string, plan-error>: ok is the plan JSON
            return 0, result
        return 1, error_document(result.code, result.message)  # a plan-error record

    def _fault_message(self, error, stderr_start):
        stderr = ""
        if self.stderr is not None:  # what the guest wrote during this call
            self.stderr.seek(stderr_start)
            stderr = self.stderr.read(STDERR_BYTES).decode("utf-8", "replace").strip()
        if self.store.get_fuel() == 0:
            message = f"The planner exceeded its deadline: it used its whole fuel budget of {self.fuel} units."
        elif "memory allocation of" in stderr:  # what std prints when memory.grow is refused
            message = f"The planner reached its memory cap of {self.memory_bytes // (1024 * 1024)} MiB."
        else:  # the error text is a backtrace, then "Caused by:" and the trap itself
            cause = [line.strip() for line in str(error).splitlines() if line.strip()][-1:]
            message = f"The planner trapped: {cause[0] if cause else 'unknown trap'}."
        return message + (f" Guest stderr: {stderr}" if stderr else "")


def main(argv):
    argv = list(argv)
    registry = None
    if "--session" in argv:
        at = argv.index("--session")
        with open(argv[at + 1] if at + 1 < len(argv) else "", encoding="utf-8") as file:
            registry = json.load(file)
        del argv[at:at + 2]
    if len(argv) not in (1, 2) or (len(argv) == 2 and argv[1] != "--batch"):
        print("usage: python plan.py PLANNER_WASM [--batch] [--session REGISTRY.json] < request.json", file=sys.stderr)
        return 2
    planner = Planner(argv[0], registry=registry)
    if len(argv) == 2:
        for line in sys.stdin.buffer:
            if line.strip():
                code, output = planner.plan_json(line.decode("utf-8", "replace"))
                sys.stdout.write(json.dumps({"exit": code, "output": output}, ensure_ascii=False) + "\n")
                sys.stdout.flush()
        return 0
    code, output = planner.plan_json(sys.stdin.buffer.read().decode("utf-8", "replace"))
    sys.stdout.write(output + "\n")
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
