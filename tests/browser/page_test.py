"""Browser test of the web page at /: starts `rexnlu serve` with the tiny model on an ephemeral
port, drives Debian's Chromium (headless) with Python's playwright (executable_path, no browser
download), checks that the spans and paths shown are those of the original implementation
(tests/data e2e cases), and saves screenshots. With a SiameseUIE model directory (config.json
model_type "bert") the cases are those of the original SiameseUIE pipeline
(tests/data/siamese_uie_tiny) and the RexUniNLU-only checks (classification) are left out.

    python page_test.py REXNLU_BINARY MODEL_DIR TEST_DATA_DIR SCREENSHOT.png

run_page_test.sh runs it in the virtual environment of tools/requirements/browser.txt.
"""
import json
import re
import subprocess
import sys
import threading
import time
import traceback
import urllib.request

from playwright.sync_api import sync_playwright

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
EXPECTED_CHECKS = {"rex": 5, "siamese": 4}
# The custom-schema check's case, per family (a short text with paths).
CUSTOM_CASE = {"rex": "ner/cf108c98d1f686e65d7a5676af5a0af1", "siamese": "ner/f76b975537952eec8064c88e212c23c6"}


def family_of(model_dir):
    with open(f"{model_dir}/config.json", encoding="utf-8") as f:
        return "siamese" if json.load(f).get("model_type") == "bert" else "rex"


def load_cases(test_data, family):
    cases = {}
    fixture = "siamese_uie_tiny" if family == "siamese" else "rexuninlu_tiny"
    with open(f"{test_data}/{fixture}/e2e_cases.jsonl", encoding="utf-8") as f:
        for line in f:
            if line.strip():
                c = json.loads(line)
                cases[c["id"]] = c
    return cases


def start_server(binary, model_dir):
    """Starts the service; returns (process, base URL) once it printed its address."""
    server = subprocess.Popen([binary, "serve", "--port", "0", "--model", model_dir],
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True)
    out = ""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = server.stdout.readline()
        if not line:
            raise RuntimeError(f"rexnlu serve exited early with {server.wait()}")
        out += line
        m = re.search(r"listening on (http://[\d.]+:\d+)", out)
        if m:
            # Keep reading what it prints, so a full pipe never blocks the service.
            threading.Thread(target=server.stdout.read, daemon=True).start()
            return server, m.group(1)
    raise RuntimeError("rexnlu serve never printed its address")


def wait_healthy(base):
    for _ in range(600):
        try:
            with urllib.request.urlopen(f"{base}/health", timeout=5) as r:
                if r.status == 200:
                    return
        except OSError:
            pass  # not up yet
        time.sleep(0.1)
    raise RuntimeError("the service never became healthy")


def rows_text(page):
    return page.locator("#paths tbody tr.path-row").all_text_contents()


def expected_row(path):
    return [f"{it['type']}: {it['span']} [{it['offset'][0]}, {it['offset'][1]})" for it in path]


results = []


def check(name, fn):
    try:
        fn()
        results.append((name, True))
        print(f"ok   {name}", flush=True)
    except Exception:  # noqa: BLE001 - every failure is reported, the other checks still run
        results.append((name, False))
        print(f"FAIL {name}\n{traceback.format_exc()}", flush=True)


def run_checks(page, cases, screenshot, family):
    def health_badge():
        page.locator("#health.ok").wait_for()
        assert page.locator("#health").text_content() == "model ready"
        # The header names the family the service loaded (from /info).
        name = {"rex": "RexUniNLU", "siamese": "SiameseUIE"}[family]
        page.wait_for_function(f"document.getElementById('family').textContent === '{name}'")

    def custom_schema():
        c = cases[CUSTOM_CASE[family]]
        page.select_option("#task", "")
        page.fill("#text", c["text"])
        page.fill("#schema", json.dumps(c["schema"], ensure_ascii=False))
        page.click("#run")
        page.locator("#paths tbody tr.path-row").first.wait_for()
        rows = rows_text(page)
        assert len(rows) == len(c["expected"]), (rows, c["expected"])
        assert page.locator("#labels-found").is_hidden()
        for i, path in enumerate(c["expected"]):
            for item in expected_row(path):
                assert item in rows[i], f"row {i}: {rows[i]} lacks {item}"
        # The highlighted text is the whole input; the marked characters are exactly the spans' union.
        assert page.locator("#highlighted").text_content() == c["text"]
        marked = "".join(page.locator("#highlighted mark").all_text_contents())
        covered = sorted({k for path in c["expected"] for it in path for k in range(it["offset"][0], it["offset"][1])})
        assert marked == "".join(c["text"][k] for k in covered), marked
        types = list(dict.fromkeys(it["type"] for path in c["expected"] for it in path))
        assert page.locator("#legend span").all_text_contents() == types
        page.screenshot(path=screenshot, full_page=True)

    def task_picker_sentiment():
        c = cases["cls_sent"]
        page.select_option("#task", "sentiment")
        assert page.locator("#schema-row").is_hidden()
        page.fill("#text", re.sub(r"^\[CLASSIFY\]", "", c["text"]))
        page.fill("#labels", "")
        page.click("#run")
        page.locator("#paths tbody tr.path-row", has_text=c["expected"][0][0]["type"]).wait_for()
        rows = rows_text(page)
        assert len(rows) == 1, rows
        label = c["expected"][0][0]["type"]
        # A classification result is a label (as the CLI's readable view shows it), not a span of
        # the marker: no "[CLASSIFY]" in the row, nothing marked, the text shown as typed.
        assert page.locator("#paths tbody tr.path-row .item").all_text_contents() == [label], rows[0]
        assert "[CLASSIFY]" not in rows[0] and "[0, 10)" not in rows[0], rows[0]
        assert page.locator("#labels-found").is_visible()
        assert page.locator("#labels-found .label").all_text_contents() == [label]
        assert page.locator("#highlighted mark").count() == 0
        assert page.locator("#highlighted").text_content() == re.sub(r"^\[CLASSIFY\]", "", c["text"])
        page.screenshot(path=re.sub(r"\.png$", "_task.png", screenshot), full_page=True)

    def task_without_labels():
        page.select_option("#task", "ner")
        page.fill("#labels", "")
        page.click("#run")
        page.locator("#error:not([hidden])").wait_for()
        assert re.match(r"^422 invalid_request: ", page.locator("#error").text_content())

    def schema_not_json():
        page.select_option("#task", "")
        page.fill("#schema", "{人物")
        page.click("#run")
        page.locator("#error:not([hidden])").wait_for()
        assert "not valid JSON" in page.locator("#error").text_content()

    check("health badge shows the model is ready, the header its family", health_badge)
    check("custom schema: paths and highlighted spans of the original", custom_schema)
    if family == "rex":  # SiameseUIE has no classification path
        check("task picker: sentiment classifies like the original", task_picker_sentiment)
    check("errors are shown: a task without its labels is a 422", task_without_labels)
    check("errors are shown: a schema that is not JSON never leaves the page", schema_not_json)


def main():
    if len(sys.argv) != 5:
        print("usage: python page_test.py REXNLU_BINARY MODEL_DIR TEST_DATA_DIR SCREENSHOT.png", file=sys.stderr)
        return 2
    binary, model_dir, test_data, screenshot = sys.argv[1:]
    family = family_of(model_dir)
    cases = load_cases(test_data, family)
    exit_code = 1
    server = None
    try:
        server, base = start_server(binary, model_dir)
        wait_healthy(base)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            try:
                page = browser.new_page(viewport={"width": 1280, "height": 800})
                page.set_default_timeout(60000)
                page.goto(f"{base}/")
                run_checks(page, cases, screenshot, family)
            finally:
                browser.close()
        if len(results) == EXPECTED_CHECKS[family] and all(ok for _, ok in results):
            exit_code = 0
    except Exception:  # noqa: BLE001
        print(f"FAIL setup\n{traceback.format_exc()}", flush=True)
    finally:
        if server is not None:
            server.terminate()  # SIGTERM: the service must drain and exit 0
            try:
                code = server.wait(timeout=60)
            except subprocess.TimeoutExpired:
                server.kill()
                code = "a timeout (killed)"
            if code != 0:
                print(f"FAIL rexnlu serve exited with {code} after SIGTERM", flush=True)
                exit_code = 1
    passed = sum(ok for _, ok in results)
    print(f"{passed} passed, {len(results) - passed} failed", flush=True)
    return exit_code


if __name__ == "__main__":
    sys.exit(main())
