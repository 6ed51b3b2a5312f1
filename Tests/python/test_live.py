#!/usr/bin/env python3
"""Watching a load while it runs: `roomlink load --metrics`, `--dashboard` and `--html`, refereed by Prometheus's
own tools and a real browser.

- promtool (Debian's prometheus package) checks every scrape of a running load, prometheus_client's OpenMetrics
  parser every OpenMetrics scrape, and no counter ever goes back.
- A real Prometheus server scrapes a running load every second; its HTTP API answers PromQL queries with the figures
  the load's final report gives.
- Headless Chromium (driven over its DevTools protocol) opens the live page: no console error, every panel drawn,
  and the figures change while the run goes; the run ends on time with the page still open. The HTML report opens
  from disk with the network off and makes no request.
- A port taken, a bad address and --processes with --metrics are refused by name; a scraper hammering the run's end
  never breaks it.

Usage: .venv/bin/python Tests/python/test_live.py PATH/TO/roomlink   (scripts/setup makes .venv)
"""

import asyncio
import base64
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.parse
import urllib.request

ROOMLINK = None
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def fetch(url, accept=None, timeout=5):
    request = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    with urllib.request.urlopen(request, timeout=timeout) as answer:
        return answer.read().decode()


class Load:
    """A `roomlink load` in the background, its announced addresses read from standard error."""

    def __init__(self, *flags, report=None):
        self.report = report
        arguments = [ROOMLINK, "load", *flags] + (["--report", report] if report else [])
        self.process = subprocess.Popen(arguments, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.addresses = {}
        self.stderr = []
        deadline = time.time() + 30
        wanted = {"--metrics": "metrics", "--dashboard": "dashboard"}
        expected = {name for flag, name in wanted.items() if flag in flags}
        while set(self.addresses) != expected and time.time() < deadline:
            line = self.process.stderr.readline()
            if not line:
                break
            self.stderr.append(line)
            match = re.match(r"roomlink: (metrics|dashboard) at (http://\S+)", line)
            if match:
                self.addresses[match.group(1)] = match.group(2)
        if set(self.addresses) != expected:
            self.process.kill()
            raise AssertionError("the load did not announce its servers: " + "".join(self.stderr))
        self.rest = threading.Thread(target=self._drain, daemon=True)
        self.rest.start()

    def _drain(self):
        for line in self.process.stderr:
            self.stderr.append(line)

    def running(self):
        return self.process.poll() is None

    def wait(self, timeout=120):
        status = self.process.wait(timeout=timeout)
        self.rest.join(timeout=5)
        self.process.stderr.close()
        return status

    def final(self):
        with open(self.report) as file:
            return json.load(file)


def samples(text):
    """{(name, frozenset(labels)): value} of a Prometheus text exposition."""
    found = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        match = re.match(r"([a-zA-Z_:][\w:]*)(\{([^}]*)\})? (\S+)", line)
        labels = frozenset(re.findall(r'(\w+)="([^"]*)"', match.group(3) or ""))
        found[(match.group(1), labels)] = float(match.group(4))
    return found


class MetricsTests(unittest.TestCase):
    def test_every_scrape_passes_promtool_and_openmetrics_and_counters_never_go_back(self):
        from prometheus_client.openmetrics.parser import text_string_to_metric_families

        with tempfile.TemporaryDirectory() as folder:
            load = Load(
                "--clients", "600", "--rooms", "12", "--clock", "real", "--duration", "14s", "--login-over", "3s",
                "--storm", "0.5@5s:3s", "--metrics", "127.0.0.1:0", "--quiet",
                report=os.path.join(folder, "report.json"),
            )
            url = load.addresses["metrics"]
            previous = {}
            scrapes = 0
            while load.running():
                try:
                    text = fetch(url)
                    open_metrics = fetch(url, accept="application/openmetrics-text; version=1.0.0")
                except OSError:
                    break  # the run ended between the check and the scrape
                checked = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
                self.assertEqual(checked.returncode, 0, checked.stdout + checked.stderr)
                self.assertEqual(checked.stdout + checked.stderr, "", "promtool's lint found something")
                self.assertTrue(open_metrics.endswith("# EOF\n"))
                families = {family.name: family for family in text_string_to_metric_families(open_metrics)}
                if "roomlink_scenario_seconds" in families:  # the run has started
                    self.assertEqual(families["roomlink_client_logins"].type, "counter")
                    self.assertEqual(families["roomlink_client_reconnect_duration_seconds"].type, "histogram")
                now = samples(text)
                for key, value in now.items():
                    if key[0].endswith("_total") or key[0].endswith("_count") or key[0].endswith("_bucket"):
                        self.assertGreaterEqual(value, previous.get(key, 0), f"{key} went back")
                previous = now
                scrapes += 1
                time.sleep(0.3)
            self.assertEqual(load.wait(), 0, "".join(load.stderr))
            self.assertGreaterEqual(scrapes, 10)
            # What the scrapes said agrees with the report, as far as they went.
            final = load.final()
            self.assertLessEqual(
                previous[("roomlink_client_reconnect_duration_seconds_count", frozenset())],
                final["load"]["reconnections"],
            )
            self.assertEqual(previous[("roomlink_scenario_seconds", frozenset({("clock", "real"), ("dialect", "zego")}))] > 0, True)

    def test_a_real_prometheus_scrapes_the_load_and_promql_gives_the_reports_figures(self):
        with tempfile.TemporaryDirectory() as folder:
            metrics_port = free_port()
            web_port = free_port()
            config = os.path.join(folder, "prometheus.yml")
            with open(config, "w") as file:
                file.write(
                    "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n"
                    "scrape_configs:\n  - job_name: roomlink\n    static_configs:\n"
                    f"      - targets: ['127.0.0.1:{metrics_port}']\n"
                )
            prometheus = subprocess.Popen(
                [
                    "prometheus", f"--config.file={config}", f"--storage.tsdb.path={folder}/data",
                    f"--web.listen-address=127.0.0.1:{web_port}",
                ],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )
            try:
                api = f"http://127.0.0.1:{web_port}"
                deadline = time.time() + 30
                while True:
                    try:
                        fetch(api + "/-/ready")
                        break
                    except OSError:
                        self.assertLess(time.time(), deadline, "Prometheus did not become ready")
                        time.sleep(0.2)
                # The storm is over and every client back long before the end: the last seconds' scrapes hold the
                # final figures.
                load = Load(
                    "--clients", "400", "--rooms", "8", "--clock", "real", "--duration", "16s", "--login-over", "2s",
                    "--storm", "0.5@4s:2s", "--metrics", f"127.0.0.1:{metrics_port}", "--quiet",
                    report=os.path.join(folder, "report.json"),
                )
                self.assertEqual(load.wait(), 0, "".join(load.stderr))
                final = load.final()["load"]

                def query(promql):
                    url = api + "/api/v1/query?" + urllib.parse.urlencode({"query": promql})
                    answer = json.loads(fetch(url))
                    self.assertEqual(answer["status"], "success", answer)
                    results = answer["data"]["result"]
                    self.assertEqual(len(results), 1, f"{promql}: {results}")
                    return float(results[0]["value"][1])

                self.assertEqual(
                    query("max_over_time(roomlink_client_reconnect_duration_seconds_count[1m])"), final["reconnections"]
                )
                self.assertEqual(query('max_over_time(roomlink_clients{state="online"}[8s])'), final["online"])
                accepted = sum(second["accepted"] for second in final["timeSeries"])
                self.assertEqual(query('max_over_time(roomlink_client_logins_total{outcome="accepted"}[1m])'), accepted)
                # The reconnections' median by PromQL lies in the same bucket as the report's.
                median = query("histogram_quantile(0.5, max_over_time(roomlink_client_reconnect_duration_seconds_bucket[1m]))")
                bounds = [0, 0.5, 1, 2, 3, 5, 8, 13, 21, 34, 60]
                bucket = lambda value: next(i for i, bound in enumerate(bounds) if value <= bound)
                self.assertEqual(bucket(median), bucket(final["reconnectSecondsP50"]))
                self.assertGreater(query("max_over_time(roomlink_scenario_seconds[1m])"), 10)

                # Every query of the docs' Grafana dashboard runs, and each whose metrics this load has answers with
                # data over the run.
                names = set(json.loads(fetch(api + "/api/v1/label/__name__/values"))["data"])
                with open(os.path.join(ROOT, "docs", "grafana", "roomlink-load.json")) as file:
                    dashboard = json.load(file)
                end = time.time()
                answered = 0
                for panel in dashboard["panels"]:
                    for target in panel["targets"]:
                        promql = target["expr"].replace("$__rate_interval", "4s").replace("$generator", ".*")
                        url = api + "/api/v1/query_range?" + urllib.parse.urlencode(
                            {"query": promql, "start": end - 40, "end": end, "step": "1"}
                        )
                        answer = json.loads(fetch(url))
                        self.assertEqual(answer["status"], "success", f"{panel['title']}: {promql}")
                        metrics = set(re.findall(r"roomlink_\w+", promql))
                        if metrics <= names:
                            self.assertTrue(answer["data"]["result"], f"{panel['title']}: no data for {promql}")
                            answered += 1
                self.assertGreaterEqual(answered, 8)
            finally:
                prometheus.terminate()
                prometheus.wait(timeout=30)


class DevTools:
    """Headless Chromium, driven over the DevTools protocol (aiohttp's WebSocket client)."""

    def __init__(self, folder):
        self.folder = folder

    async def __aenter__(self):
        self.browser = subprocess.Popen(
            [
                chromium(), "--headless=new", "--no-sandbox", "--disable-gpu", "--remote-debugging-port=0",
                f"--user-data-dir={self.folder}/profile", "--window-size=1280,2000", "--no-first-run", "about:blank",
            ],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True,  # a process group of its own: its helpers are stopped with it (see stop)
        )
        try:
            return await self._connect()
        except BaseException:
            if hasattr(self, "session"):
                await self.session.close()
            self.stop()
            raise

    async def _connect(self):
        import aiohttp

        port_file = os.path.join(self.folder, "profile", "DevToolsActivePort")
        deadline = time.time() + 30
        def announced():
            if not os.path.exists(port_file):
                return []
            with open(port_file) as file:
                return file.read().split()

        while len(announced()) < 2:
            if time.time() > deadline:
                raise AssertionError("Chromium did not open its DevTools port")
            await asyncio.sleep(0.1)
        port = announced()[0]
        self.session = aiohttp.ClientSession()
        async with self.session.get(f"http://127.0.0.1:{port}/json/list") as answer:
            pages = [target for target in await answer.json() if target["type"] == "page"]
        self.socket = await self.session.ws_connect(pages[0]["webSocketDebuggerUrl"], max_msg_size=0)
        self.next_id = 0
        self.pending = {}
        self.errors = []
        self.requests = []
        self.reader = asyncio.create_task(self._read())
        for domain in ["Page", "Runtime", "Log", "Network"]:
            await self.call(domain + ".enable")
        return self

    async def __aexit__(self, *exception):
        self.reader.cancel()
        await self.socket.close()
        await self.session.close()
        self.stop()

    def stop(self):
        """Stops Chromium and every helper it started, and waits until none is left.

        Killing the browser process alone leaves its helpers (renderer, GPU, utility processes) writing into the
        profile for a moment, and the test's temporary folder then fails to be removed ("Directory not empty:
        'Default'", seen once in CI). The helpers are in the browser's process group, and every one names the profile
        on its command line.
        """
        try:
            os.killpg(self.browser.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.browser.wait()
        profile = f"--user-data-dir={self.folder}/profile"
        deadline = time.time() + 30
        while True:
            left = subprocess.run(["pgrep", "-f", "--", profile], stdout=subprocess.DEVNULL).returncode == 0
            if not left:
                return
            if time.time() > deadline:
                raise AssertionError(f"Chromium's helpers were still running 30 s after it was stopped ({profile})")
            subprocess.run(["pkill", "-KILL", "-f", "--", profile])
            time.sleep(0.1)

    async def _read(self):
        async for message in self.socket:
            data = json.loads(message.data)
            if "id" in data:
                self.pending.pop(data["id"]).set_result(data)
                continue
            method, params = data.get("method"), data.get("params", {})
            if method == "Runtime.exceptionThrown":
                self.errors.append(params["exceptionDetails"].get("text", "exception"))
            elif method == "Runtime.consoleAPICalled" and params["type"] in ("error", "assert"):
                self.errors.append(json.dumps(params["args"]))
            elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
                self.errors.append(params["entry"]["text"] + " " + params["entry"].get("url", ""))
            elif method == "Network.requestWillBeSent":
                self.requests.append(params["request"]["url"])

    async def call(self, method, **params):
        self.next_id += 1
        future = asyncio.get_running_loop().create_future()
        self.pending[self.next_id] = future
        await self.socket.send_str(json.dumps({"id": self.next_id, "method": method, "params": params}))
        answer = await asyncio.wait_for(future, 30)
        if "error" in answer:
            raise AssertionError(f"{method}: {answer['error']}")
        return answer["result"]

    async def evaluate(self, expression):
        result = await self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return result["result"].get("value")

    async def open(self, url):
        await self.call("Page.navigate", url=url)

    async def panels(self):
        """Each drawn panel of the page: the plot's SVG, with its size on screen and how many lines and bars it has."""
        return await self.evaluate(
            """[...document.querySelectorAll('#panels svg')].map(svg => {
                 const box = svg.getBoundingClientRect();
                 return {width: box.width, height: box.height,
                         marks: svg.querySelectorAll('path, rect, polyline').length};
               })"""
        )


def chromium():
    return shutil.which("chromium") or shutil.which("chromium-browser") or "chromium"


class PageTests(unittest.TestCase):
    def test_the_live_page_draws_every_panel_and_moves_while_the_run_goes(self):
        async def scenario(folder):
            load = Load(
                "--clients", "600", "--rooms", "12", "--clock", "real", "--duration", "16s", "--login-over", "4s",
                "--storm", "0.5@6s:3s", "--dashboard", "127.0.0.1:0", "--quiet",
                report=os.path.join(folder, "report.json"),
            )
            started = time.time()
            async with DevTools(folder) as browser:
                await browser.open(load.addresses["dashboard"])
                seen = []
                for _ in range(30):
                    await asyncio.sleep(0.5)
                    figure = await browser.evaluate(
                        "document.querySelector('[data-figure=\"scenario\"]')?.textContent ?? null"
                    )
                    if figure is not None:
                        seen.append(figure)
                    if len(set(seen)) >= 3:
                        break
                self.assertGreaterEqual(len(set(seen)), 3, f"the page's figures did not move: {seen}")
                panels = await browser.panels()
                self.assertGreaterEqual(len(panels), 1)
                for panel in panels:
                    self.assertGreater(panel["width"], 300)
                    self.assertGreater(panel["height"], 300)
                    self.assertGreater(panel["marks"], 10)
                shot = await browser.call("Page.captureScreenshot", format="png")
                self.assertGreater(len(base64.b64decode(shot["data"])), 10_000)
                # The run ends on time with the page open and polling.
                status = await asyncio.get_running_loop().run_in_executor(None, load.wait)
                self.assertEqual(status, 0, "".join(load.stderr))
                self.assertLess(time.time() - started, 40)
                await asyncio.sleep(1.5)
                state = await browser.evaluate("document.getElementById('status').dataset.state")
                self.assertIn(state, ("finished", "gone"))
                self.assertEqual(browser.errors, [])
                online = await browser.evaluate("document.querySelector('[data-figure=\"online\"]').textContent")
                self.assertGreater(int(online), 0)

        with tempfile.TemporaryDirectory() as folder:
            asyncio.run(scenario(folder))

    def test_the_html_report_opens_from_disk_with_no_network(self):
        async def scenario(folder):
            page = os.path.join(folder, "report.html")
            result = subprocess.run(
                [
                    ROOMLINK, "load", "--clients", "2000", "--rooms", "20", "--duration", "5m", "--storm",
                    "0.3@2m:30s", "--dialect", "agora", "--html", page, "--quiet",
                ],
                capture_output=True, text=True, timeout=120,
            )
            self.assertEqual(result.returncode, 0, result.stderr)
            async with DevTools(folder) as browser:
                await browser.call(
                    "Network.emulateNetworkConditions", offline=True, latency=0, downloadThroughput=-1,
                    uploadThroughput=-1,
                )
                await browser.open("file://" + page)
                for _ in range(40):
                    await asyncio.sleep(0.25)
                    if await browser.evaluate("document.readyState") == "complete":
                        break
                verdict = await browser.evaluate("document.getElementById('verdict').textContent")
                self.assertEqual(verdict, "no spec violations")
                summary = await browser.evaluate("document.getElementById('summary').textContent")
                self.assertIn("reconnections", summary)
                panels = await browser.panels()
                self.assertEqual(len(panels), 1)
                self.assertGreater(panels[0]["marks"], 10)
                self.assertEqual([url for url in browser.requests if not url.startswith("file://")], [])
                self.assertEqual(browser.errors, [])

        with tempfile.TemporaryDirectory() as folder:
            asyncio.run(scenario(folder))


class BadInputTests(unittest.TestCase):
    def run_load(self, *flags):
        return subprocess.run(
            [ROOMLINK, "load", "--clients", "10", "--rooms", "2", "--duration", "10s", *flags],
            capture_output=True, text=True, timeout=60,
        )

    def test_a_port_taken_is_named_at_start(self):
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            port = taken.getsockname()[1]
            for flag in ["--metrics", "--dashboard"]:
                started = time.time()
                result = self.run_load(flag, f"127.0.0.1:{port}")
                self.assertEqual(result.returncode, 2, result.stderr)
                self.assertIn(f"{flag}: cannot listen on 127.0.0.1:{port}", result.stderr)
                self.assertLess(time.time() - started, 10)

    def test_bad_addresses_and_combinations_are_named(self):
        result = self.run_load("--metrics", "nowhere")
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertIn("--metrics", result.stderr)
        result = self.run_load("--metrics", "127.0.0.1:9", "--dashboard", "127.0.0.1:9")
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertIn("cannot share", result.stderr)
        result = self.run_load("--processes", "2", "--metrics", "127.0.0.1:0")
        self.assertEqual(result.returncode, 64, result.stderr)
        self.assertIn("--processes", result.stderr)
        result = self.run_load("--html", "/nonexistent/folder/report.html")
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("report.html", result.stderr)

    def test_scrapes_hammering_the_end_never_break_the_run(self):
        with tempfile.TemporaryDirectory() as folder:
            load = Load(
                "--clients", "200", "--rooms", "4", "--clock", "real", "--duration", "3s", "--login-over", "1s",
                "--metrics", "127.0.0.1:0", "--dashboard", "127.0.0.1:0", "--quiet",
                report=os.path.join(folder, "report.json"),
            )
            answered = 0
            while load.running():
                for url in [load.addresses["metrics"], load.addresses["dashboard"] + "live.json",
                            load.addresses["dashboard"] + "plot.svg"]:
                    try:
                        fetch(url, timeout=2)
                        answered += 1
                    except OSError:
                        pass
            self.assertEqual(load.wait(), 0, "".join(load.stderr))
            self.assertGreater(answered, 10)
            final = load.final()
            self.assertEqual(final["load"]["online"], 200)
            # What the servers' threads used answering is said, and is part of the run's CPU time.
            self.assertGreater(final["liveViewCPUSeconds"], 0)
            self.assertLess(final["liveViewCPUSeconds"], final["cpuSeconds"])


class Redis:
    """A redis-server of the test's own, on a free port."""

    def __init__(self, folder):
        self.port = free_port()
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", folder],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        for _ in range(100):
            if subprocess.run(["redis-cli", "-p", str(self.port), "ping"], capture_output=True).returncode == 0:
                break
            time.sleep(0.1)

    def url(self, run):
        return f"redis://127.0.0.1:{self.port}/{run}"

    def stop(self):
        self.process.kill()
        self.process.wait()


@unittest.skipUnless(shutil.which("redis-server"), "needs redis-server")
class FleetTests(unittest.TestCase):
    """Generators that strike together: the refusals, a generator that dies, and Redis lost mid-run. (Their start's
    spread across hosts is scripts/fleet-test's.)"""

    FLAGS = ["--clients", "400", "--rooms", "8", "--duration", "3m", "--storm", "0.5@1m:20s", "--seed", "3", "--quiet"]

    def generator(self, redis, run, index, count, *extra, timeout="20s"):
        return subprocess.Popen(
            [ROOMLINK, "load", *self.FLAGS, "--shard", f"{index}/{count}", "--coordinate", redis.url(run),
             "--coordinate-timeout", timeout, *extra],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )

    def test_refusals_are_named(self):
        with tempfile.TemporaryDirectory() as folder:
            redis = Redis(folder)
            try:
                # A missing generator is named when the wait runs out.
                lonely = self.generator(redis, "alone", 0, 3, timeout="1s")
                _, err = lonely.communicate(timeout=60)
                self.assertEqual(lonely.returncode, 2, err)
                self.assertIn("generator 1, 2 never registered", err)
                # A generator with other flags is refused, naming both.
                first = self.generator(redis, "flags", 0, 2)
                time.sleep(1)
                other = subprocess.run(
                    [ROOMLINK, "load", *self.FLAGS, "--rooms", "10", "--shard", "1/2", "--coordinate",
                     redis.url("flags")],
                    capture_output=True, text=True, timeout=60,
                )
                self.assertEqual(other.returncode, 2, other.stderr)
                self.assertIn("generator 1's flags differ from the fleet 'flags''s", other.stderr)
                # The same slice twice (two fleets with one name) is refused, naming who holds it.
                twice = subprocess.run(
                    [ROOMLINK, "load", *self.FLAGS, "--shard", "0/2", "--coordinate", redis.url("flags")],
                    capture_output=True, text=True, timeout=60,
                )
                self.assertEqual(twice.returncode, 2, twice.stderr)
                self.assertIn("slice 0/2 of the run 'flags' is already registered by", twice.stderr)
                second = self.generator(redis, "flags", 1, 2)
                for process in (first, second):
                    _, err = process.communicate(timeout=120)
                    self.assertEqual(process.returncode, 0, err)
                # A fleet that ran is not joined again under its name.
                again = subprocess.run(
                    [ROOMLINK, "load", *self.FLAGS, "--shard", "0/2", "--coordinate", redis.url("flags")],
                    capture_output=True, text=True, timeout=60,
                )
                self.assertEqual(again.returncode, 2, again.stderr)
                self.assertIn("started already", again.stderr)
                merged = subprocess.run(
                    [ROOMLINK, "report", "merge", redis.url("flags"), "--report", "-"],
                    capture_output=True, text=True, timeout=60,
                )
                self.assertEqual(merged.returncode, 0, merged.stderr)
                self.assertEqual(json.loads(merged.stdout)["parts"], 2)
                # Redis not there, and a run name that is not one.
                for address, words in [("redis://127.0.0.1:1/x", "cannot reach Redis"),
                                       (redis.url("bad name"), "must be 1 to 64 letters")]:
                    result = subprocess.run(
                        [ROOMLINK, "load", *self.FLAGS, "--shard", "0/2", "--coordinate", address],
                        capture_output=True, text=True, timeout=60,
                    )
                    self.assertEqual(result.returncode, 2, result.stderr)
                    self.assertIn(words, result.stderr)
            finally:
                redis.stop()

    def test_a_generator_that_dies_is_named_with_what_it_lacks(self):
        with tempfile.TemporaryDirectory() as folder:
            redis = Redis(folder)
            try:
                flags = ["--clock", "real", "--duration", "8s", "--login-over", "1s", "--storm", "0.5@4s:1s"]
                common = [ROOMLINK, "load", "--clients", "200", "--rooms", "4", "--seed", "2", "--quiet", *flags]
                survivor = subprocess.Popen(
                    [*common, "--shard", "0/2", "--coordinate", redis.url("dies"), "--report",
                     os.path.join(folder, "0.json")],
                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                )
                doomed = subprocess.Popen(
                    [*common, "--shard", "1/2", "--coordinate", redis.url("dies")],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                )
                time.sleep(5)  # two seconds' lead, then figures pushed every second
                doomed.kill()
                doomed.wait()
                _, err = survivor.communicate(timeout=60)
                self.assertEqual(survivor.returncode, 0, err)
                time.sleep(5.5)  # its "alive" lapses
                watch = subprocess.run(
                    [ROOMLINK, "report", "watch", redis.url("dies"), "--timeout", "10s"],
                    capture_output=True, text=True, timeout=60,
                )
                self.assertEqual(watch.returncode, 1, watch.stderr)
                self.assertIn("not answering: generator 1", watch.stderr)
                merged = subprocess.run(
                    [ROOMLINK, "report", "merge", redis.url("dies"), "--report", "-", "--html",
                     os.path.join(folder, "fleet.html")],
                    capture_output=True, text=True, timeout=60,
                )
                self.assertEqual(merged.returncode, 0, merged.stderr)
                report = json.loads(merged.stdout)
                self.assertEqual(report["parts"], 1)
                self.assertEqual(len(report["lacks"]), 1)
                self.assertRegex(report["lacks"][0], r"slice 1/2: generator 1 on .* stopped answering, and left no "
                                                     r"report; its last figures, at \d+\.\d of 8 s")
                self.assertIn("lacks 1 part", merged.stderr)
                with open(os.path.join(folder, "fleet.html")) as page:
                    self.assertIn('<ul id="lacks">', page.read())
            finally:
                redis.stop()

    def test_redis_lost_mid_run_is_a_warning_and_the_run_keeps_its_report(self):
        with tempfile.TemporaryDirectory() as folder:
            redis = Redis(folder)
            common = [ROOMLINK, "load", "--clients", "200", "--rooms", "4", "--seed", "2", "--quiet", "--clock",
                      "real", "--duration", "6s", "--login-over", "1s"]
            generators = [
                subprocess.Popen(
                    [*common, "--shard", f"{index}/2", "--coordinate", redis.url("lost"), "--report",
                     os.path.join(folder, f"{index}.json"), "--events", os.path.join(folder, f"{index}.jsonl")],
                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                )
                for index in range(2)
            ]
            time.sleep(4.5)
            redis.stop()
            for index, process in enumerate(generators):
                _, err = process.communicate(timeout=60)
                self.assertEqual(process.returncode, 0, err)
                self.assertIn("warning: lost the fleet's Redis", err)
                self.assertIn("did not reach the fleet's Redis", err)
                with open(os.path.join(folder, f"{index}.json")) as file:
                    report = json.load(file)
                self.assertEqual(report["violations"], 0)
                self.assertEqual(report["clients"], 100)
                with open(os.path.join(folder, f"{index}.jsonl")) as file:
                    self.assertEqual(sum(1 for _ in file), report["events"])


if __name__ == "__main__":
    ROOMLINK = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
