# ruff: noqa: E501
"""The hand-written episodes behind tests/data/agent_retrieval.json (see make_agent_set.py).

Each episode is one debugging or feature task as a coding agent lives it: the person's problem,
the agent reading or running something, the tool's output (with the real-looking identifiers and
error strings such output has), the agent's fix, a check, a follow-up question and its answer.
Queries name their target by role in the episode: ``problem``, ``output``, ``fix``, ``answer``.

- ``para``: paraphrases that share no word with their target (checked by the generator with
  the FTS5 Porter tokenizer): how a person remembers a conversation weeks later, in other words.
- ``ident``: identifiers and error strings, as pasted; every message of the set holding the
  string (case-insensitively) is relevant, and it must occur in this episode only.
- ``kw``: plain keyword questions using words of the target.
"""

from __future__ import annotations

from typing import Any

Episode = dict[str, Any]

EPISODES: list[Episode] = [
    {
        "project": "jsonkit",
        "problem": "The JSON parser crashes on nested brackets like [[1, [2]], 3]. Can you find out why?",
        "tool": (
            "read_file",
            {"path": "src/jsonkit/parser.py"},
            "def parse_array(self):\n    self.expect('[')\n    while self.peek() != ']':\n"
            "        items.append(self.parse_value())\n        self.depth = 0  # reset\n",
        ),
        "fix": "Found it: parse_array resets self.depth to 0 after every item, so the closing bracket "
        "of the inner list is matched against the wrong level. I track depth on a stack now.",
        "check": ("run_tests", {"path": "tests/test_parser.py"}, "===== 42 passed, 0 failed in 0.31s ====="),
        "followup": "Does it reject trailing commas too?",
        "answer": "Now it does: a trailing comma raises ParseError('trailing comma at line 3, column 14').",
        "para": [
            ("decoder blows up with deeply embedded lists", "problem"),
            ("stopped zeroing nesting counters inside loops", "fix"),
        ],
        "ident": ["parse_array", "ParseError('trailing comma"],
        "kw": [
            ("why does the JSON parser crash on nested brackets", "problem"),
            ("trailing commas rejected by the parser", "answer"),
        ],
    },
    {
        "project": "ledger",
        "problem": "Our migration script fails with sqlite3.OperationalError: database is locked when "
        "the worker is running.",
        "tool": (
            "grep",
            {"pattern": "connect(", "path": "ledger/"},
            "ledger/db.py:12:    conn = sqlite3.connect(DB_PATH)\n"
            "ledger/worker.py:40:    conn = sqlite3.connect(DB_PATH, isolation_level=None)\n"
            "ledger/worker.py:41:    conn.execute('BEGIN EXCLUSIVE')",
        ),
        "fix": "The worker holds BEGIN EXCLUSIVE for its whole batch. I switched it to BEGIN IMMEDIATE, "
        "short transactions, WAL mode and a busy_timeout of 5000 ms, so the migration waits.",
        "check": (
            "bash",
            {"command": "python -m ledger.migrate --to 14"},
            "migrated ledger.db to schema 14 in 2.4s",
        ),
        "followup": "Will readers still block while the worker writes?",
        "answer": "No: in WAL mode readers see the last committed snapshot and never wait for the writer.",
        "para": [
            ("upgrade step refuses to proceed during background jobs", "problem"),
            ("shorter write sessions plus journaling tweak letting upgrades queue", "fix"),
        ],
        "ident": ["sqlite3.OperationalError: database is locked", "BEGIN EXCLUSIVE"],
        "kw": [
            ("migration fails when the worker is running", "problem"),
            ("do readers block while the worker writes in WAL mode", "answer"),
        ],
    },
    {
        "project": "webshop",
        "problem": "Checkout returns a 500 for some customers since yesterday's deploy.",
        "tool": (
            "bash",
            {"command": "kubectl logs deploy/checkout --since=2h | grep Traceback -A6"},
            'Traceback (most recent call last):\n  File "checkout/views.py", line 88, in apply_coupon\n'
            "    rate = COUPONS[code]['rate']\nKeyError: 'SPRING24'",
        ),
        "fix": "apply_coupon indexes COUPONS directly, and the SPRING24 code was removed from the table "
        "in the deploy. It now treats an unknown code as no discount and logs a warning.",
        "check": ("run_tests", {"path": "tests/test_checkout.py"}, "18 passed in 1.02s"),
        "followup": "Should expired codes show an error to the customer?",
        "answer": "Yes, I added a message under the coupon field: 'This code has expired'.",
        "para": [
            ("paying fails with server error after last release", "problem"),
            ("missing voucher means zero reduction instead of exception", "fix"),
        ],
        "ident": ["KeyError: 'SPRING24'", "apply_coupon"],
        "kw": [
            ("checkout returns 500 after deploy", "problem"),
            ("expired coupon code error message", "answer"),
        ],
    },
    {
        "project": "webshop",
        "problem": "Product images load very slowly on the category page, around 6 seconds.",
        "tool": (
            "bash",
            {
                "command": "curl -s -o /dev/null -w '%{size_download} %{time_total}' "
                "https://shop.local/static/img/p-1042.jpg"
            },
            "4718592 5.93",
        ),
        "fix": "The thumbnails are the original 4.5 MB uploads. I added a resize step in "
        "make_thumbnail() that writes 320px WebP files and the template uses srcset.",
        "check": (
            "bash",
            {"command": "python manage.py rebuild_thumbnails"},
            "rebuilt 1,842 thumbnails (avg 38 KB)",
        ),
        "followup": "Can we lazy load the ones below the fold?",
        "answer": 'Done: loading="lazy" on every product card image except the first row.',
        "para": [
            ("pictures take ages to appear when browsing", "problem"),
            ("smaller previews generated so pages render quicker", "fix"),
        ],
        "ident": ["make_thumbnail()", "p-1042.jpg"],
        "kw": [
            ("product images load slowly on the category page", "problem"),
            ("lazy load images below the fold", "answer"),
        ],
    },
    {
        "project": "pipeline",
        "problem": "The nightly ETL job ran out of memory again and the dashboard is empty this morning.",
        "tool": (
            "bash",
            {"command": "journalctl -u etl-nightly --since yesterday | tail -5"},
            "etl-nightly[2231]: loading events_2024_05.parquet\n"
            "kernel: Out of memory: Killed process 2231 (python) total-vm:31457280kB\n"
            "systemd[1]: etl-nightly.service: Main process exited, code=killed, status=9/KILL",
        ),
        "fix": "load_events() reads the whole month into one DataFrame. It now streams row groups with "
        "pyarrow and aggregates per day, so peak memory stays under 2 GB.",
        "check": (
            "bash",
            {"command": "/usr/bin/time -v python -m pipeline.nightly --date 2024-05-31"},
            "Maximum resident set size (kbytes): 1874320",
        ),
        "followup": "Can we get alerted when it fails?",
        "answer": "I added an OnFailure= unit that posts to the #data-alerts channel.",
        "para": [
            ("overnight batch got killed for exhausting RAM, charts blank", "problem"),
            ("chunked ingestion keeps usage low", "fix"),
        ],
        "ident": ["status=9/KILL", "load_events()"],
        "kw": [("nightly ETL job out of memory", "problem"), ("alert when the nightly job fails", "answer")],
    },
    {
        "project": "pipeline",
        "problem": "Timestamps in the report are off by two hours for European users.",
        "tool": (
            "read_file",
            {"path": "pipeline/report.py"},
            "def to_local(ts):\n    return datetime.fromtimestamp(ts)  # server time\n",
        ),
        "fix": "to_local used the server's timezone. It now converts with zoneinfo.ZoneInfo(user.tz) "
        "and stores everything in UTC.",
        "check": ("run_tests", {"path": "tests/test_report.py"}, "9 passed, 1 xfailed in 0.44s"),
        "followup": "What about daylight saving changes?",
        "answer": "ZoneInfo handles DST transitions; I added tests for the March and October switches.",
        "para": [
            ("clock shifted wrongly, people living abroad", "problem"),
            ("clock conversion honours each person's zone", "fix"),
        ],
        "ident": ["datetime.fromtimestamp(ts)", "zoneinfo.ZoneInfo(user.tz)"],
        "kw": [
            ("timestamps off by two hours in the report", "problem"),
            ("daylight saving time tests", "answer"),
        ],
    },
    {
        "project": "mobile-api",
        "problem": "Login on the Android app fails with 'certificate not trusted' on older phones.",
        "tool": (
            "bash",
            {"command": "openssl s_client -connect api.example.app:443 -showcerts </dev/null | head"},
            "depth=1 C = US, O = Let's Encrypt, CN = R3\nverify error:num=20:unable to get local issuer "
            "certificate\nverify return:1",
        ),
        "fix": "The server sends only the leaf certificate. I configured nginx with fullchain.pem instead "
        "of cert.pem so the intermediate is included.",
        "check": (
            "bash",
            {"command": "nginx -t && systemctl reload nginx"},
            "nginx: configuration file /etc/nginx/nginx.conf test is successful",
        ),
        "followup": "Do we need to change anything in the app itself?",
        "answer": "No app release is needed; Android 7 devices trust the chain once the intermediate is served.",
        "para": [
            ("old handsets cannot sign in because of TLS validation problems", "problem"),
            ("webserver now ships every link up to root authority", "fix"),
        ],
        "ident": ["unable to get local issuer certificate", "fullchain.pem"],
        "kw": [
            ("android login certificate not trusted", "problem"),
            ("does the app need a new release", "answer"),
        ],
    },
    {
        "project": "mobile-api",
        "problem": "Push notifications arrive twice on iOS.",
        "tool": (
            "grep",
            {"pattern": "send_push", "path": "api/"},
            "api/tasks.py:31:    send_push(user, payload)\napi/signals.py:12:    send_push(instance.user, payload)",
        ),
        "fix": "send_push is called from the Celery task and from a post_save signal. I removed the "
        "signal handler and made the task idempotent with a dedupe key in Redis.",
        "check": ("run_tests", {"path": "tests/test_push.py"}, "7 passed in 0.88s"),
        "followup": "How long does the dedupe key live?",
        "answer": "Ten minutes (SET key NX EX 600), enough to cover Celery retries.",
        "para": [
            ("iphone alerts show up duplicated", "problem"),
            ("dropped one of two senders; repeated deliveries ignored", "fix"),
        ],
        "ident": ["send_push(instance.user, payload)", "SET key NX EX 600"],
        "kw": [
            ("push notifications arrive twice on iOS", "problem"),
            ("how long the dedupe key lives", "answer"),
        ],
    },
    {
        "project": "infra",
        "problem": "The staging Kubernetes pod keeps restarting every few minutes.",
        "tool": (
            "bash",
            {"command": "kubectl describe pod api-staging-7d9f | tail -8"},
            "Last State: Terminated\n  Reason: OOMKilled\n  Exit Code: 137\n"
            'Liveness probe failed: Get "http://10.1.4.7:8080/healthz": context deadline exceeded',
        ),
        "fix": "The liveness probe times out during startup while migrations run. I added a startupProbe "
        "with failureThreshold 30 and raised the memory limit from 256Mi to 512Mi.",
        "check": (
            "bash",
            {"command": "kubectl rollout status deploy/api-staging"},
            'deployment "api-staging" successfully rolled out',
        ),
        "followup": "Is 512Mi enough for production?",
        "answer": "Production peaks at 410Mi, so I set requests to 384Mi and limits to 640Mi there.",
        "para": [
            ("container on preprod loops crashing", "problem"),
            ("gave boot longer before health checks, plus bigger RAM cap", "fix"),
        ],
        "ident": ["OOMKilled", "context deadline exceeded"],
        "kw": [("staging pod keeps restarting", "problem"), ("memory limits for production", "answer")],
    },
    {
        "project": "infra",
        "problem": "Terraform apply wants to destroy and recreate the main database.",
        "tool": (
            "bash",
            {"command": "terraform plan -target=aws_db_instance.main"},
            '  # aws_db_instance.main must be replaced\n-/+ resource "aws_db_instance" "main" {\n'
            '      ~ engine_version = "13.7" -> "15.4" # forces replacement',
        ),
        "fix": "Changing engine_version across major versions forces replacement unless "
        "allow_major_version_upgrade = true. I set it and added lifecycle { prevent_destroy = true }.",
        "check": (
            "bash",
            {"command": "terraform plan -target=aws_db_instance.main"},
            "  ~ update in-place\nPlan: 0 to add, 1 to change, 0 to destroy.",
        ),
        "followup": "When will the upgrade actually happen?",
        "answer": "In the next maintenance window, Sunday 03:00 UTC, unless we apply with apply_immediately.",
        "para": [
            ("infrastructure tool plans wiping our primary datastore", "problem"),
            ("permit jumping releases, guard against deletion", "fix"),
        ],
        "ident": ["aws_db_instance.main", "forces replacement"],
        "kw": [
            ("terraform wants to recreate the database", "problem"),
            ("when will the database upgrade happen", "answer"),
        ],
    },
    {
        "project": "frontend",
        "problem": "The React dashboard freezes when I open the settings tab.",
        "tool": (
            "read_file",
            {"path": "src/Settings.tsx"},
            "useEffect(() => {\n  setPrefs({ ...prefs, theme });\n}, [prefs]);",
        ),
        "fix": "The useEffect depends on prefs and sets prefs, so it loops forever. I moved the theme "
        "into the initial state and dropped the effect.",
        "check": ("bash", {"command": "npm test -- Settings"}, "Tests: 12 passed, 12 total"),
        "followup": "Is there a lint rule that would have caught this?",
        "answer": "react-hooks/exhaustive-deps warns about it; I enabled it as an error in .eslintrc.",
        "para": [
            ("ui hangs once preferences appear", "problem"),
            ("hook kept re-rendering itself endlessly", "fix"),
        ],
        "ident": ["setPrefs({ ...prefs, theme })", "react-hooks/exhaustive-deps"],
        "kw": [
            ("dashboard freezes when opening the settings tab", "problem"),
            ("lint rule for useEffect dependencies", "answer"),
        ],
    },
    {
        "project": "frontend",
        "problem": "Dark mode colours are wrong in Safari, the cards are white on white.",
        "tool": (
            "read_file",
            {"path": "src/theme.css"},
            ":root { --card-bg: white; }\n@media (prefers-color-scheme: dark) { :root { --card-bg: #1e1e1e } }\n"
            ".card { background: var(--card-bg, white) color-mix(in srgb, var(--fg) 80%, white); }",
        ),
        "fix": "Safari 15 does not support color-mix(), which invalidated the whole background "
        "declaration. I added a plain fallback colour before it.",
        "check": ("bash", {"command": "npx playwright test theme --project=webkit"}, "4 passed (6.1s)"),
        "followup": "Which browsers still lack color-mix?",
        "answer": "Safari before 16.2 and Firefox before 113; the fallback covers them.",
        "para": [
            ("night theme shows blank panels, apple browser", "problem"),
            ("outdated engines skipped modern css blending; simple default placed earlier", "fix"),
        ],
        "ident": ["color-mix(in srgb", "--card-bg"],
        "kw": [
            ("dark mode colours wrong in Safari", "problem"),
            ("which browsers lack color-mix support", "answer"),
        ],
    },
    {
        "project": "auth",
        "problem": "Users get logged out after exactly one hour even though they are active.",
        "tool": (
            "grep",
            {"pattern": "exp", "path": "auth/tokens.py"},
            "auth/tokens.py:22:    payload['exp'] = now + timedelta(hours=1)\n"
            "auth/tokens.py:57:    # TODO refresh_token rotation",
        ),
        "fix": "Access tokens expire after an hour and nothing refreshed them. The client now calls "
        "/auth/refresh when it gets a 401 with error=token_expired and retries the request.",
        "check": ("run_tests", {"path": "tests/test_refresh.py"}, "11 passed in 0.73s"),
        "followup": "Are refresh tokens rotated?",
        "answer": "Yes, each refresh issues a new refresh token and revokes the old one (reuse is detected).",
        "para": [
            ("people kicked off sessions following sixty minutes despite being busy", "problem"),
            ("renew credentials automatically upon unauthorized responses", "fix"),
        ],
        "ident": ["error=token_expired", "timedelta(hours=1)"],
        "kw": [("users logged out after one hour", "problem"), ("are refresh tokens rotated", "answer")],
    },
    {
        "project": "auth",
        "problem": "Password reset emails are not being delivered to Gmail addresses.",
        "tool": (
            "bash",
            {"command": "grep reset /var/log/mail.log | tail -3"},
            "postfix/smtp[811]: to=<ana@gmail.com>, status=bounced (550-5.7.26 This mail is unauthenticated, "
            "DMARC policy of example.com)",
        ),
        "fix": "Our domain had no DKIM signature, so Gmail rejected mail under DMARC. I set up opendkim, "
        "published the selector TXT record and added SPF include for the mail provider.",
        "check": (
            "bash",
            {"command": "dig +short TXT mail._domainkey.example.com"},
            '"v=DKIM1; k=rsa; p=MIIBIjANBgkqh..."',
        ),
        "followup": "How do we know it works now?",
        "answer": "A test reset to a Gmail account arrived; its headers show dkim=pass and dmarc=pass.",
        "para": [
            ("recovery messages never reach google mailboxes", "problem"),
            ("cryptographic signing entries exposed; spam filters now accept messages", "fix"),
        ],
        "ident": ["550-5.7.26", "mail._domainkey.example.com"],
        "kw": [
            ("password reset emails not delivered to gmail", "problem"),
            ("dkim pass in headers", "answer"),
        ],
    },
    {
        "project": "search-svc",
        "problem": "Elasticsearch queries got slow after we added the new tags field, p99 is 3 seconds.",
        "tool": (
            "bash",
            {"command": "curl -s localhost:9200/products/_mapping | jq .products.mappings.properties.tags"},
            '{\n  "type": "text",\n  "fielddata": true\n}',
        ),
        "fix": "tags was mapped as text with fielddata enabled, so every terms aggregation loaded it "
        "into heap. I remapped it as keyword and reindexed into products_v2 with an alias.",
        "check": (
            "bash",
            {"command": "curl -s localhost:9200/_cat/aliases/products"},
            "products products_v2 - - - -",
        ),
        "followup": "Did latency recover?",
        "answer": "p99 is back to 140 ms and heap usage dropped from 85% to 40%.",
        "para": [
            ("lookups became sluggish once labels were introduced", "problem"),
            ("changed column type: grouping avoids filling memory", "fix"),
        ],
        "ident": ['"fielddata": true', "products_v2"],
        "kw": [
            ("elasticsearch slow after adding tags field", "problem"),
            ("did search latency recover", "answer"),
        ],
    },
    {
        "project": "search-svc",
        "problem": "The autocomplete returns nothing for words with accents like 'café'.",
        "tool": (
            "bash",
            {
                "command": 'curl -s \'localhost:9200/products/_analyze\' -d \'{"analyzer":"autocomplete","text":"Café"}\''
            },
            '{"tokens":[{"token":"café"}]}',
        ),
        "fix": "The autocomplete analyzer lowercases but does not fold accents, while the query side "
        "does. I added the asciifolding filter to the index analyzer too.",
        "check": (
            "bash",
            {"command": "python scripts/reindex.py --index products"},
            "reindexed 52,113 documents in 41s",
        ),
        "followup": "Does it still find 'café' when typed with the accent?",
        "answer": "Yes, both 'cafe' and 'café' fold to 'cafe' on both sides now.",
        "para": [
            ("typeahead fails on diacritics", "problem"),
            ("stripped marks when storing documents, matching lookups", "fix"),
        ],
        "ident": ["asciifolding", '"analyzer":"autocomplete"'],
        "kw": [
            ("autocomplete returns nothing for accented words", "problem"),
            ("typed with the accent still found", "answer"),
        ],
    },
    {
        "project": "billing",
        "problem": "Invoices show amounts like 19.990000000000002 instead of 19.99.",
        "tool": (
            "read_file",
            {"path": "billing/invoice.py"},
            'total = sum(line.price * line.qty for line in lines)\nreturn f"{total}"',
        ),
        "fix": "Prices were floats. I switched the model to Decimal with quantize(Decimal('0.01'), "
        "ROUND_HALF_UP) and format with two decimals.",
        "check": ("run_tests", {"path": "tests/test_invoice.py"}, "23 passed in 0.52s"),
        "followup": "Are old invoices affected?",
        "answer": "Stored totals were already rounded by the PDF renderer; only the web view showed the float.",
        "para": [
            ("bills display weird long fractions", "problem"),
            ("money handled via exact base-ten arithmetic", "fix"),
        ],
        "ident": ["19.990000000000002", "ROUND_HALF_UP"],
        "kw": [
            ("invoice amounts show floating point errors", "problem"),
            ("are old invoices affected", "answer"),
        ],
    },
    {
        "project": "billing",
        "problem": "The Stripe webhook handler times out and Stripe keeps retrying the same event.",
        "tool": (
            "bash",
            {"command": "stripe events resend evt_1PqR2s --dry-run"},
            "webhook endpoint responded 504 after 30.0s; retry 6 of 16 scheduled",
        ),
        "fix": "The handler generated the PDF synchronously. It now stores the event id, enqueues "
        "generate_invoice_pdf and returns 200 right away; duplicate event ids are skipped.",
        "check": ("run_tests", {"path": "tests/test_webhooks.py"}, "6 passed in 0.40s"),
        "followup": "What if the queue is down?",
        "answer": "Then we return 503 so the payment provider retries later, which is what we want.",
        "para": [
            ("payment provider callbacks hang, causing repeated deliveries", "problem"),
            ("acknowledge fast then produce documents asynchronously", "fix"),
        ],
        "ident": ["evt_1PqR2s", "generate_invoice_pdf"],
        "kw": [
            ("stripe webhook handler times out", "problem"),
            ("what happens if the queue is down", "answer"),
        ],
    },
    {
        "project": "cli-tool",
        "problem": "Installing our CLI with pip on Windows fails with a long path error.",
        "tool": (
            "bash",
            {"command": "pip install mytool==2.3.0 -v"},
            "ERROR: Could not install packages due to an OSError: [Errno 2] No such file or directory: "
            "'C:\\\\Users\\\\dev\\\\AppData\\\\Local\\\\...\\\\fixtures\\\\snapshots\\\\very_long_name.json'",
        ),
        "fix": "The wheel included test fixtures with deep paths. I excluded tests/ from the package "
        "in pyproject.toml so the installed tree stays under 260 characters.",
        "check": (
            "bash",
            {"command": "python -m build && unzip -l dist/mytool-2.3.1-py3-none-any.whl | tail -1"},
            "   184213                     61 files",
        ),
        "followup": "Should we also tell users to enable long paths?",
        "answer": "I added a note to the install docs about LongPathsEnabled, but it is not required anymore.",
        "para": [
            ("setup breaks under microsoft systems due to filename length", "problem"),
            ("shipped archive no longer bundles sample data", "fix"),
        ],
        "ident": ["[Errno 2] No such file or directory", "mytool-2.3.1-py3-none-any.whl"],
        "kw": [
            ("pip install fails on windows long path", "problem"),
            ("enable long paths note in install docs", "answer"),
        ],
    },
    {
        "project": "cli-tool",
        "problem": "The progress bar prints garbage characters when output is piped to a file.",
        "tool": (
            "bash",
            {"command": "mytool sync > out.log; head -c 120 out.log | od -c | head -3"},
            "0000000 033 [ 2 K 033 [ 1 G   S y n c i n g   1 / 4 0",
        ),
        "fix": "The bar wrote ANSI escape codes unconditionally. It now checks sys.stdout.isatty() and "
        "prints one line per file when not attached to a terminal.",
        "check": ("run_tests", {"path": "tests/test_progress.py"}, "5 passed in 0.12s"),
        "followup": "Can users force colours anyway?",
        "answer": "Yes, FORCE_COLOR=1 or --color=always still enables them; NO_COLOR disables them.",
        "para": [
            ("status indicator writes junk into redirected logs", "problem"),
            ("detect interactive console first; plain rows otherwise", "fix"),
        ],
        "ident": ["sys.stdout.isatty()", "033 [ 2 K"],
        "kw": [
            ("progress bar garbage characters when piped", "problem"),
            ("force colours with FORCE_COLOR", "answer"),
        ],
    },
    {
        "project": "ml-train",
        "problem": "Training loss becomes NaN after about 2000 steps.",
        "tool": (
            "bash",
            {"command": "grep -n 'step 19' train.log | tail -3"},
            "step 1990 loss 2.31 grad_norm 48.2\nstep 1995 loss 2.29 grad_norm 512.7\n"
            "step 1999 loss nan grad_norm inf",
        ),
        "fix": "The gradients explode once the warmup ends. I added clip_grad_norm_(model.parameters(), "
        "1.0) and lowered the peak learning rate from 3e-3 to 1e-3.",
        "check": (
            "bash",
            {"command": "python train.py --steps 5000 --quiet"},
            "step 5000 loss 1.87 grad_norm 0.94",
        ),
        "followup": "Should we use bf16 instead of fp16 as well?",
        "answer": "Yes, bf16 has the exponent range of fp32, so the loss scaler is not needed anymore.",
        "para": [
            ("model objective turns undefined midway through optimisation", "problem"),
            ("limit update magnitudes; slower optimiser schedule", "fix"),
        ],
        "ident": ["grad_norm inf", "clip_grad_norm_"],
        "kw": [("training loss becomes nan", "problem"), ("use bf16 instead of fp16", "answer")],
    },
    {
        "project": "ml-train",
        "problem": "The data loader is the bottleneck, GPU utilisation sits at 30 percent.",
        "tool": (
            "bash",
            {"command": "py-spy top --pid 4411 --nonblocking | head -6"},
            "  %Own   Function (filename)\n 61.0%  decode_jpeg (dataset.py)\n 12.0%  "
            "random_resized_crop (augment.py)",
        ),
        "fix": "Images were decoded on the main process with num_workers=0. I set num_workers=8, "
        "pin_memory=True and persistent_workers=True, and pre-resized the dataset to 256px.",
        "check": (
            "bash",
            {"command": "nvidia-smi --query-gpu=utilization.gpu --format=csv"},
            "utilization.gpu [%]\n94 %",
        ),
        "followup": "Does this change the results?",
        "answer": "No, augmentation is identical; one epoch now takes 11 minutes instead of 34.",
        "para": [
            ("accelerator idles because input feeding lags", "problem"),
            ("parallel loading helpers plus smaller stored pictures", "fix"),
        ],
        "ident": ["decode_jpeg", "persistent_workers=True"],
        "kw": [
            ("data loader bottleneck low gpu utilisation", "problem"),
            ("how long one epoch takes now", "answer"),
        ],
    },
    {
        "project": "chatbot",
        "problem": "The bot answers in English even when the user writes in German.",
        "tool": (
            "read_file",
            {"path": "bot/prompt.py"},
            'SYSTEM = "You are a helpful assistant. Always answer in English."\n',
        ),
        "fix": "The system prompt forced English. It now says to answer in the language of the user's "
        "last message, and detect_language() sets a hint when the message is short.",
        "check": ("run_tests", {"path": "tests/test_language.py"}, "14 passed in 3.20s"),
        "followup": "What about mixed-language messages?",
        "answer": "The hint follows the majority language of the message; ties fall back to the account setting.",
        "para": [
            ("assistant replies with wrong tongue for deutsch speakers", "problem"),
            ("instructions mirror whichever idiom someone typed", "fix"),
        ],
        "ident": ["Always answer in English.", "detect_language()"],
        "kw": [
            ("bot answers in English when user writes German", "problem"),
            ("mixed language messages", "answer"),
        ],
    },
    {
        "project": "chatbot",
        "problem": "We hit the OpenAI rate limit during peak hours and users see errors.",
        "tool": (
            "bash",
            {"command": "grep RateLimitError logs/bot.log | tail -2"},
            "openai.RateLimitError: Error code: 429 - Rate limit reached for gpt-4o in organization "
            "org-abc on tokens per min (TPM): Limit 30000, Used 29871",
        ),
        "fix": "Requests fired without backoff. I wrapped the client in retry with exponential backoff "
        "and jitter (tenacity, max 5 attempts) and trimmed the history sent to 12 turns.",
        "check": (
            "bash",
            {"command": "locust -f load.py --headless -u 200 -t 2m"},
            "Aggregated  12,381 requests  0 failures",
        ),
        "followup": "Could we cache common answers?",
        "answer": "I added a semantic cache keyed by the normalised question; hit rate is 18% so far.",
        "para": [
            ("llm provider throttles us at busy times", "problem"),
            ("wait progressively longer between tries, send shorter context", "fix"),
        ],
        "ident": ["openai.RateLimitError", "tokens per min (TPM)"],
        "kw": [("openai rate limit errors at peak hours", "problem"), ("cache common answers", "answer")],
    },
    {
        "project": "gamedev",
        "problem": "The character falls through the floor when the frame rate drops.",
        "tool": (
            "read_file",
            {"path": "src/physics.rs"},
            "fn step(&mut self, dt: f32) {\n    self.pos += self.vel * dt;\n    if self.pos.y < FLOOR { ... }\n}",
        ),
        "fix": "With a large dt the body moves past the floor in one step. I switched to a fixed "
        "timestep of 1/120 s with an accumulator and swept collision for fast bodies.",
        "check": ("bash", {"command": "cargo test physics"}, "test result: ok. 31 passed; 0 failed"),
        "followup": "Does rendering still look smooth?",
        "answer": "Yes, rendering interpolates between the last two physics states.",
        "para": [
            ("player sinks beneath ground while game lags", "problem"),
            ("constant simulation tick plus continuous hit detection", "fix"),
        ],
        "ident": ["self.pos += self.vel * dt", "test result: ok. 31 passed"],
        "kw": [
            ("character falls through the floor", "problem"),
            ("rendering smooth with fixed timestep", "answer"),
        ],
    },
    {
        "project": "gamedev",
        "problem": "Audio crackles on Linux with PulseAudio when many sounds play at once.",
        "tool": (
            "bash",
            {"command": "RUST_LOG=debug ./game 2>&1 | grep -m3 underrun"},
            "WARN audio: buffer underrun (requested 512 frames, got 128)\n"
            "WARN audio: buffer underrun (requested 512 frames, got 96)",
        ),
        "fix": "The mixer ran on the render thread. I moved it to its own thread and raised the buffer "
        "from 512 to 1024 frames; latency is still 21 ms at 48 kHz.",
        "check": ("bash", {"command": "./game --bench-audio 60"}, "0 underruns in 60s, 64 voices"),
        "followup": "Is it fine on Windows too?",
        "answer": "WASAPI had no underruns before or after; the change only matters with PulseAudio.",
        "para": [
            ("noise stutters under penguin desktops amid heavy effects", "problem"),
            ("dedicated mixing worker, larger queue", "fix"),
        ],
        "ident": ["buffer underrun (requested 512 frames", "--bench-audio"],
        "kw": [("audio crackles on linux pulseaudio", "problem"), ("is audio fine on windows", "answer")],
    },
    {
        "project": "docs-site",
        "problem": "Search on the documentation site does not find pages added last week.",
        "tool": (
            "bash",
            {"command": "ls -la public/search-index.json"},
            "-rw-r--r-- 1 ci ci 1841022 May  2 09:14 public/search-index.json",
        ),
        "fix": "The search index is built only on the main branch and cached by key without the "
        "content hash. I keyed the CI cache on hashFiles('docs/**') so it rebuilds when pages change.",
        "check": ("bash", {"command": "npm run build:search"}, "indexed 612 pages in 8.2s"),
        "followup": "How big is the index now?",
        "answer": "1.9 MB uncompressed, 410 KB gzipped; it loads lazily on first keystroke.",
        "para": [
            ("new articles missing from lookup results", "problem"),
            ("stale artifacts refreshed whenever articles differ", "fix"),
        ],
        "ident": ["hashFiles('docs/**')", "public/search-index.json"],
        "kw": [
            ("documentation search does not find new pages", "problem"),
            ("how big is the search index", "answer"),
        ],
    },
    {
        "project": "docs-site",
        "problem": "Broken links everywhere after we moved the docs to a subpath /v2/.",
        "tool": ("bash", {"command": "npx linkinator dist --recurse | grep -c BROKEN"}, "347"),
        "fix": "Links were absolute from the root. I set base: '/v2/' in the site config and replaced "
        "hard-coded hrefs with the withBase() helper.",
        "check": ("bash", {"command": "npx linkinator dist --recurse | grep -c BROKEN"}, "0"),
        "followup": "Do the old URLs redirect?",
        "answer": "Yes, a 301 rule maps /guide/* to /v2/guide/* in the CDN config.",
        "para": [
            ("relocating manuals under versioned prefix wrecked hyperlinks", "problem"),
            ("prefix option plus utility generating addresses", "fix"),
        ],
        "ident": ["withBase()", "base: '/v2/'"],
        "kw": [("broken links after moving docs to subpath", "problem"), ("old URLs redirect", "answer")],
    },
    {
        "project": "ledger",
        "problem": "Two concurrent transfers can overdraw an account below zero.",
        "tool": (
            "read_file",
            {"path": "ledger/transfer.py"},
            "balance = get_balance(src)\nif balance >= amount:\n    debit(src, amount)\n    credit(dst, amount)",
        ),
        "fix": "Check-then-act race: both transfers read the same balance. The debit is now a single "
        "UPDATE accounts SET balance = balance - ? WHERE id = ? AND balance >= ? and we check rowcount.",
        "check": (
            "run_tests",
            {"path": "tests/test_concurrency.py"},
            "3 passed in 4.11s (1000 parallel transfers)",
        ),
        "followup": "Do we need SERIALIZABLE isolation for this?",
        "answer": "Not for this case: the conditional UPDATE is atomic; the ledger entries go in the same transaction.",
        "para": [
            ("simultaneous payments let balances go negative", "problem"),
            ("atomic conditional decrement replaces read-compare-write", "fix"),
        ],
        "ident": ["AND balance >= ?", "get_balance(src)"],
        "kw": [
            ("concurrent transfers overdraw account", "problem"),
            ("serializable isolation needed", "answer"),
        ],
    },
]


def roles() -> tuple[str, ...]:
    """The roles an episode's queries may target, in message order."""
    return ("problem", "look", "output", "fix", "check", "followup", "answer")
