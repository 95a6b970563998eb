"""A refresh process for the kill -9 test: load the embedder once, fork one refresh per request.

Loading MiniLM takes seconds, so this "zygote" loads it once and forks a child
for every refresh the test asks for. The zygote never embeds before forking:
PyTorch's OpenMP thread pool does not survive fork, and a child forked after
the pool started would hang.

Two ways to pick the moment of death, both SIGKILL (no cleanup, no rollback
by the client; the server notices the closed socket):

- ``kill_after``: the zygote (the child's parent) kills the child that many
  seconds after the fork: any moment, including mid-embedding or mid-COPY;
- ``kill_at_statement``: the child kills itself right after its N-th SQL
  statement returns, so death lands evenly across the write path;
- ``kill_after_commit``: the child kills itself right after COMMIT returns (0)
  or after the N-th statement that follows it (index check, VACUUM ANALYZE),
  a window a random delay rarely hits.

Protocol (one JSON object per line): the zygote prints {"ready": true}; for
each request {"corpus": PATH, "index": NAME} plus at most one of the three
kill points on stdin, it forks and prints {"pid", "seconds",
"statements" (counted by a child that finished, else null) and "signal" or
"exit_code"}. The zygote kills before it reaps, so the pid cannot have been
reused by another process.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
import traceback

APPLICATION_NAME = "refresh-kill-test"


def install_kill_points(kill_at: int | None, kill_after_commit: int | None) -> list[int]:
    """Count `Connection.execute` calls in this process and SIGKILL it at a chosen point.

    `kill_at`: right after the N-th statement returns. `kill_after_commit`: right
    after the first top-level COMMIT (0) or the N-th statement after it.
    """
    import psycopg
    from psycopg.pq import TransactionStatus

    def die() -> None:
        os.kill(os.getpid(), signal.SIGKILL)

    counter = [0]
    since_commit: list[int | None] = [None]
    original_execute = psycopg.Connection.execute
    original_exit = psycopg.Transaction.__exit__

    def execute(self, *args, **kwargs):
        result = original_execute(self, *args, **kwargs)
        counter[0] += 1
        if counter[0] == kill_at:
            die()
        if since_commit[0] is not None:
            since_commit[0] += 1
            if since_commit[0] == kill_after_commit:
                die()
        return result

    def exit_transaction(self, exc_type, exc, traceback_):
        result = original_exit(self, exc_type, exc, traceback_)
        top_level = self.connection.info.transaction_status == TransactionStatus.IDLE
        if exc_type is None and top_level and since_commit[0] is None:
            since_commit[0] = 0
            if kill_after_commit == 0:
                die()
        return result

    psycopg.Connection.execute = execute
    psycopg.Transaction.__exit__ = exit_transaction
    return counter


def refresh_in_child(database_url: str, embedder, request: dict, report_fd: int) -> int:
    from memory_baseline.config import Config
    from memory_baseline.refresh import sync
    from memory_baseline.server import connect

    with connect(database_url) as conn:
        conn.execute(f"SET application_name = '{APPLICATION_NAME}'")
        counter = install_kill_points(request.get("kill_at_statement"),
                                      request.get("kill_after_commit"))
        sync(conn, Config(index=request["index"]), request["corpus"], remove_missing=True,
             embedder=embedder)
    os.write(report_fd, str(counter[0]).encode())
    return 0


def main() -> int:
    database_url = sys.argv[1]
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from memory_baseline.config import EmbedderConfig
    from memory_baseline.embedders import get_embedder

    embedder = get_embedder(EmbedderConfig())
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        report_read, report_write = os.pipe()
        started = time.perf_counter()
        child = os.fork()
        if child == 0:
            code = 1
            try:
                os.close(report_read)
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, 1)  # the pipe to the test carries protocol lines only
                code = refresh_in_child(database_url, embedder, request, report_write)
            except BaseException:
                traceback.print_exc()
            finally:
                sys.stderr.flush()
                os._exit(code)
        os.close(report_write)
        if request.get("kill_after") is not None:
            time.sleep(request["kill_after"])
            os.kill(child, signal.SIGKILL)  # a child that already exited is a zombie: no-op
        _, status = os.waitpid(child, 0)
        counted = os.read(report_read, 64)
        os.close(report_read)
        result = {"pid": child, "seconds": time.perf_counter() - started,
                  "statements": int(counted) if counted else None}
        if os.WIFSIGNALED(status):
            result["signal"] = os.WTERMSIG(status)
        else:
            result["exit_code"] = os.WEXITSTATUS(status)
        print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
