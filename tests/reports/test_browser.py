"""The report page in a real browser: headless Chromium (Debian's chromium and chromium-driver,
scripts/install-chromium.sh) driven by selenium with explicit paths. It renders without console
errors, every plot has drawn marks, and a bucket's replay command is on the page; a full-page
screenshot is left at build/report/report.png for a person to look at."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from accv.cli import main

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")

pytestmark = pytest.mark.skipif(CHROMIUM is None or DRIVER is None,
                                reason="needs Debian's chromium and chromium-driver (scripts/install-chromium.sh)")

#: per plot: its label, the marks it drew with a non-empty box, and its rendered size
PLOTS_JS = """
return Array.from(document.querySelectorAll('svg.plot')).map(s => {
  const r = s.getBoundingClientRect();
  const marks = Array.from(s.querySelectorAll('rect, circle, polyline')).filter(m => {
    const b = m.getBBox(); return b.width > 0 || b.height > 0; }).length;
  return [s.getAttribute('aria-label'), marks, r.width, r.height];
});
"""


def test_report_renders_in_chromium(campaign_db: Path, tmp_path: Path) -> None:
    webdriver = pytest.importorskip("selenium.webdriver", reason="needs selenium (the test extra)")
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By

    page = tmp_path / "report.html"
    assert main(["report", str(campaign_db), "-o", str(page)]) == 0
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,900"):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=DRIVER), options=opts)
    try:
        driver.get(page.as_uri())
        assert driver.execute_script("return document.readyState") == "complete"
        assert driver.title.startswith("accv campaign")
        plots = driver.execute_script(PLOTS_JS)
        # throughput, outcomes, 3 operator heat maps, 3 instruction bars, 3 compile-time bars, the cycles
        # scatter, and the three trend charts
        assert len(plots) >= 14, plots
        empty = [p for p in plots if p[1] == 0 or p[2] < 50 or p[3] < 50]
        assert not empty, f"plots that drew nothing: {empty}"
        replays = [e.text for e in driver.find_elements(By.CSS_SELECTOR, "code.replay")]
        assert replays and all(r.startswith("accv fuzz --replay ") for r in replays), replays
        errors = [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
        assert not errors, errors
        height = driver.execute_script("return document.documentElement.scrollHeight")
        driver.set_window_size(1280, height)
        shot = ROOT / "build" / "report" / "report.png"
        shot.parent.mkdir(parents=True, exist_ok=True)
        assert driver.save_screenshot(str(shot))
        assert shot.stat().st_size > 10_000
    finally:
        driver.quit()
