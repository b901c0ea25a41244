"""Regenerate the screenshots of docs/report.md: the HTML report and the proxy's live dashboard.

    python docs/screenshots/make_screenshots.py

Needs Debian's chromium on PATH. The traffic is the bundled demo session plus two sessions derived from it
(tests/test_report.py's make_traffic), recorded through `cachelint import`, so the numbers are the pipeline's own.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
import tempfile
from importlib import resources
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "tests"))

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run", "--hide-scrollbars"]


def shoot(page: Path, png: Path, size: str, tmp: Path) -> None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        raise SystemExit("no chromium on PATH (apt-get install -y chromium)")
    subprocess.run([browser, *FLAGS, f"--user-data-dir={tmp / png.stem}", f"--window-size={size}", f"--screenshot={png}", page.as_uri()],
                   check=True, capture_output=True, timeout=120)
    print(f"wrote {png}")


def report(tmp: Path) -> None:
    from test_report import make_traffic

    make_traffic(tmp / "traffic.jsonl")
    db = tmp / "db.sqlite"
    subprocess.run([sys.executable, "-m", "cachelint", "import", str(tmp / "traffic.jsonl"), "--db", str(db)], check=True, capture_output=True)
    page = tmp / "report.html"
    subprocess.run([sys.executable, "-m", "cachelint", "report", "--db", str(db), "--format", "html", "-o", str(page)], check=True, capture_output=True)
    shoot(page, HERE / "report.png", "1400,1500", tmp)
    text = subprocess.run([sys.executable, "-m", "cachelint", "report", "--db", str(db)], check=True, capture_output=True, text=True).stdout
    (HERE / "report.txt").write_text(text)
    print(f"wrote {HERE / 'report.txt'}")


def dashboard(tmp: Path) -> None:
    from rich.console import Console

    from cachelint.proxy.dashboard import Dashboard
    from cachelint.record.analyze import Recorder
    from cachelint.record.importers import read

    with resources.as_file(resources.files("cachelint.demo").joinpath("data", "traffic.jsonl")) as file:
        captured = sorted(read(file), key=lambda c: c.started_at)
    recorder = Recorder(store=None)
    view = Dashboard(recorder.totals, "http://127.0.0.1:8082")
    for item in captured:
        view.on_row(recorder.record(item))
    console = Console(record=True, width=176, force_terminal=True, color_system="truecolor", file=io.StringIO())
    console.print(view.render())
    for line in view.summary("~/.local/share/cachelint/cachelint.db"):
        console.print(line, highlight=False)
    svg = tmp / "dashboard.svg"
    svg.write_text(console.export_svg(title="cachelint proxy"))
    page = tmp / "dashboard.html"
    page.write_text(f"<!doctype html><html><body style='margin:0;background:#fff'>{svg.read_text()}</body></html>")
    shoot(page, HERE / "dashboard.png", "1400,620", tmp)


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as folder:
        report(Path(folder))
        dashboard(Path(folder))
