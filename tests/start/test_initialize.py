"""initialize() / shutdown() / is_initialized() / cluster_spec() semantics.

JAX's backend is process-global, so each scenario runs in a fresh interpreter.
"""

from __future__ import annotations

import pytest

from helpers.support import clean_env, free_port, run_python

# Part of the fast subset the test command also runs at the oldest supported JAX and Keras.
pytestmark = pytest.mark.compat


def run_json(code: str, devices: int = 2) -> dict[str, object]:
    result = run_python(code, env=clean_env(devices))
    assert result.returncode == 0, result.describe()
    return result.report()


def test_single_process_initialize_shutdown_cycle() -> None:
    report = run_json(
        "import json, kdist\n"
        "before = kdist.is_initialized(), kdist.cluster_spec()\n"
        "kdist.initialize(num_processes=1)\n"
        "during = kdist.is_initialized(), repr(kdist.cluster_spec())\n"
        "devices = kdist.list_devices()\n"
        "kdist.initialize(num_processes=1)  # same config: no-op\n"
        "kdist.shutdown()\n"
        "after = kdist.is_initialized(), kdist.cluster_spec()\n"
        "kdist.shutdown()  # a second shutdown does nothing\n"
        "from kdist._start import initialize as _initialize\n"
        "print(json.dumps({'before': before, 'during': during, 'after': after,\n"
        "                  'devices': devices,\n"
        "                  'phases': sorted(_initialize.startup_timings())}))\n"
    )
    assert report["before"] == [False, None]
    assert report["during"] == [
        True,
        "ClusterSpec(job_addresses=[], num_processes=1, process_id=0, timeout=300, "
        "preflight=True, cluster_detection='auto', scheduler=None, local_device_ids=None)",
    ]
    assert report["after"] == [False, None]
    assert report["devices"] == ["cpu:0", "cpu:1"]
    # Neither a roll call nor JAX's initialize ran: only the always-present keys.
    assert report["phases"] == ["arrived", "total_s"]


def test_initialize_again_with_other_values_raises() -> None:
    report = run_json(
        "import json, kdist\n"
        "kdist.initialize(num_processes=1)\n"
        "try:\n"
        "    kdist.initialize(num_processes=1, process_id=0, job_addresses='127.0.0.1:9')\n"
        "except kdist.ConfigError as e:\n"
        "    print(json.dumps({'error': str(e)}))\n"
    )
    message = str(report["error"])
    assert "kdist is already initialized as ClusterSpec(job_addresses=[]" in message
    assert "this call resolved to ClusterSpec(job_addresses=['127.0.0.1:9']" in message
    assert "call kdist.shutdown() before" in message


def test_initialize_after_the_backend_started_explains_the_order() -> None:
    port = free_port()
    report = run_json(
        "import json, sys, kdist\n"
        "kdist.list_devices()\n"
        "try:\n"
        f"    kdist.initialize('127.0.0.1:{port}', 2, 1)\n"
        "except kdist.InitializationOrderError as e:\n"
        "    print(json.dumps({'error': str(e), 'runtime': isinstance(e, RuntimeError),\n"
        "                      'initialized': kdist.is_initialized()}))\n"
    )
    assert report["runtime"] is True
    assert report["initialized"] is False
    assert "must run before the JAX backend starts" in str(report["error"])
    assert "kdist.list_devices()" in str(report["error"])


def test_initialize_after_jax_distributed_was_called_directly_is_refused() -> None:
    port = free_port()
    report = run_json(
        "import json, jax, kdist\n"
        f"jax.distributed.initialize('127.0.0.1:{port}', num_processes=1, process_id=0)\n"
        "try:\n"
        f"    kdist.initialize('127.0.0.1:{port}', 1, 0)\n"
        "except kdist.InitializationOrderError as e:\n"
        "    print(json.dumps({'error': str(e)}))\n"
        "jax.distributed.shutdown()\n"
    )
    assert "jax.distributed is already initialized" in str(report["error"])


def test_single_process_with_a_coordinator_runs_jax_distributed() -> None:
    port = free_port()
    report = run_json(
        "import json, jax, kdist\n"
        f"kdist.initialize('127.0.0.1:{port}', 1, 0)\n"
        "from kdist._start import initialize as _initialize\n"
        "print(json.dumps({'jax_distributed': jax.distributed.is_initialized(),\n"
        "                  'devices': kdist.list_devices(),\n"
        "                  'phases': sorted(_initialize.startup_timings())}))\n"
        "kdist.shutdown()\n"
    )
    # One process: no roll call, so no roll_call_s / jax_import_wait_s (preflight is on).
    assert report == {
        "jax_distributed": True,
        "devices": ["cpu:0", "cpu:1"],
        "phases": ["arrived", "jax_initialize_s", "total_s"],
    }


@pytest.mark.parametrize("process_id", [0, 1])
def test_missing_jax_is_reported_before_the_roll_call(process_id: int) -> None:
    port = free_port()
    # JAX made unimportable in this interpreter (sys.modules[name] = None is what
    # `import` treats as absent); the roll call's first steps are spied on.
    report = run_json(
        "import json, sys, time\n"
        "sys.modules['jax'] = None\n"
        "import kdist\n"
        "from kdist import _core\n"
        "from kdist._start import roll_call as _roll_call\n"
        "calls = []\n"
        "def spy(name, real):\n"
        "    def wrapper(*args, **kwargs):\n"
        "        calls.append(name)\n"
        "        return real(*args, **kwargs)\n"
        "    return wrapper\n"
        "_core.bind_coordinator_port = spy('bind', _core.bind_coordinator_port)\n"
        "_roll_call.roll_call = spy('roll_call', _roll_call.roll_call)\n"
        "started = time.monotonic()\n"
        "try:\n"
        f"    kdist.initialize('127.0.0.1:{port}', 2, {process_id}, timeout=60)\n"
        "    error = None\n"
        "except ImportError as e:\n"
        "    error = {'type': type(e).__name__, 'name': e.name, 'message': str(e)}\n"
        "except Exception as e:\n"
        "    error = {'type': type(e).__name__, 'message': str(e)}\n"
        "print(json.dumps({'error': error, 'calls': calls, 'executable': sys.executable,\n"
        "                  'seconds': time.monotonic() - started,\n"
        "                  'initialized': kdist.is_initialized()}))\n"
    )
    error = report["error"]
    assert isinstance(error, dict), report
    assert error["type"] == "ModuleNotFoundError", report
    assert error["name"] == "jax"
    message = str(error["message"])
    assert f"in process {process_id} of 2" in message
    assert f"at 127.0.0.1:{port}" in message
    assert str(report["executable"]) in message
    assert "pip install jax" in message
    assert "before the roll call" in message
    assert report["calls"] == [], "no port bound, no roll call joined"
    assert report["initialized"] is False
    assert float(report["seconds"]) < 20  # at once, not the 60 s deadline of a roll call


def test_validation_error_leaves_nothing_initialized() -> None:
    report = run_json(
        "import json, sys, kdist\n"
        "try:\n"
        "    kdist.initialize('127.0.0.1:1', 2, 5)\n"
        "except kdist.ConfigError as e:\n"
        "    print(json.dumps({'initialized': kdist.is_initialized(),\n"
        "                      'jax': 'jax' in sys.modules}))\n"
    )
    assert report == {"initialized": False, "jax": False}


@pytest.mark.parametrize("bad", ["[]", "2.0", "True"])
def test_type_errors_come_before_anything_else(bad: str) -> None:
    result = run_python(
        f"import kdist\nkdist.initialize('127.0.0.1:1', {bad}, 0)\n", env=clean_env()
    )
    assert result.returncode == 1
    assert "TypeError: num_processes=" in result.stderr
    assert bad in result.stderr
