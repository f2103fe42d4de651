"""tf.train: servers (this part of issue 11: the in-process local server)."""
from ... import _rill


class Server:
    """tf.train.Server. create_local_server() is a one-task cluster on a free loopback port in
    this process; its target is what tf.Session(target) connects to."""

    def __init__(self, server_or_cluster, job_name=None, task_index=None, protocol=None,
                 config=None, start=True):
        if isinstance(server_or_cluster, _rill.Server):
            self._srv = server_or_cluster
            return
        raise NotImplementedError("tf.train.Server over a ClusterSpec: not yet in rill's Python "
                                  "front end (issue 11); create_local_server() is")

    @staticmethod
    def create_local_server(config=None, start=True):
        return Server(_rill.Server.create_local())

    @property
    def target(self):
        return self._srv.target

    def join(self):
        self._srv.join()
