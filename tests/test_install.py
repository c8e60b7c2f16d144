"""`pip install tracelens-logs` (the distribution's name; the package and the command are `tracelens`)
then `tracelens demo`, outside any checkout: the wheel is built from this checkout, installed into a fresh virtualenv, and its `tracelens` script runs the demo from a folder that
holds nothing else; the sample-log generator shipped inside it (`python -m tracelens.sample_logs`)
writes the committed logs byte for byte. The dependencies (polars, pyarrow, ...) come from the test's
own environment through a .pth file, so that the test needs no network for them; the package itself
comes only from the wheel."""

from __future__ import annotations

import os
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import ROOT, SAMPLE_LOGS

pytestmark = pytest.mark.timeout(900)


def test_demo_works_from_an_installed_wheel(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = wheels.glob("tracelens_logs-*.whl")
    metadata = next(n for n in zipfile.ZipFile(wheel).namelist() if n.endswith(".dist-info/METADATA"))
    assert "\nName: tracelens-logs\n" in zipfile.ZipFile(wheel).read(metadata).decode()
    shipped = {n for n in zipfile.ZipFile(wheel).namelist() if n.startswith("tracelens/sample_logs/")}
    assert {f"tracelens/sample_logs/{p.name}" for p in SAMPLE_LOGS.glob("*.log*")} <= shipped

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q", str(wheel)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert installed.returncode == 0, installed.stderr[-3000:]
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # After the wheel's own folder: the dependencies of this test's environment.
    Path(purelib, "zz_test_dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("TRACELENS_DEBUG", "PYTHONPATH")}
    where = subprocess.run(
        [str(python), "-c", "import tracelens; print(tracelens.__file__)"],
        capture_output=True,
        text=True,
        cwd=elsewhere,
        env=env,
    )
    assert where.stdout.startswith(purelib), (where.stdout, where.stderr)
    demo = subprocess.run(
        [str(venv / "bin" / "tracelens"), "demo", "-q"],
        capture_output=True,
        text=True,
        cwd=elsewhere,
        env=env,
        timeout=600,
    )
    assert demo.returncode == 0, demo.stderr
    assert "eagle3_fixed" in demo.stdout and "17 run(s)" in demo.stdout, demo.stdout
    assert (elsewhere / "report.html").stat().st_size > 100_000

    # The generator ships inside the wheel too (relative imports only), and writes the same bytes there.
    regenerated = elsewhere / "regenerated"
    generated = subprocess.run(
        [str(python), "-m", "tracelens.sample_logs", "--out", str(regenerated)],
        capture_output=True,
        text=True,
        cwd=elsewhere,
        env=env,
        timeout=300,
    )
    assert generated.returncode == 0, generated.stderr[-3000:]
    assert sorted(p.name for p in regenerated.iterdir()) == sorted(p.name for p in SAMPLE_LOGS.glob("*.log*"))
    differ = [p.name for p in regenerated.iterdir() if p.read_bytes() != (SAMPLE_LOGS / p.name).read_bytes()]
    assert not differ, differ
