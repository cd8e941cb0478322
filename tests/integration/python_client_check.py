#!/usr/bin/python3
"""Debian's python3-kubernetes against kdp-manager, with nothing but the kubeconfig it wrote.

Usage: python_client_check.py KUBECONFIG NODE

Prints one line per fact for the calling test to check, and exits 1 on any API error:
  node <name> <Ready status> <resource>=<capacity>/<allocatable>
  pod <namespace>/<name> <phase>
  watch <type> <namespace>/<name>
  event <reason> <kind> <namespace>/<name>
"""
import sys

from kubernetes import client, config, watch


def main():
    kubeconfig, node_name = sys.argv[1], sys.argv[2]
    config.load_kube_config(config_file=kubeconfig)
    core = client.CoreV1Api()

    node = core.read_node(node_name)
    ready = next(c.type for c in node.status.conditions if c.type == "Ready" and c.status == "True")
    gpu = "example.com/gpu"
    print("node %s %s %s=%s/%s" % (node.metadata.name, ready, gpu, node.status.capacity[gpu],
                                   node.status.allocatable[gpu]))

    pods = core.list_pod_for_all_namespaces(field_selector="spec.nodeName=%s" % node_name)
    for pod in pods.items:
        print("pod %s/%s %s" % (pod.metadata.namespace, pod.metadata.name, pod.status.phase))

    # A watch from the beginning (no resourceVersion): the pods that exist arrive as ADDED.
    stream = watch.Watch()
    for event in stream.stream(core.list_namespaced_pod, "default", timeout_seconds=2):
        print("watch %s %s/%s" % (event["type"], event["object"].metadata.namespace,
                                  event["object"].metadata.name))
        stream.stop()

    events = core.list_event_for_all_namespaces(field_selector="involvedObject.kind=Pod")
    for event in events.items:
        print("event %s %s %s/%s" % (event.reason, event.involved_object.kind,
                                     event.involved_object.namespace, event.involved_object.name))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except client.exceptions.ApiException as error:
        print("API error: %s %s" % (error.status, error.body), file=sys.stderr)
        sys.exit(1)
