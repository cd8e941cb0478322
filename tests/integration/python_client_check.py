#!/usr/bin/python3
"""Debian's python3-kubernetes against kdp-manager, with nothing but the kubeconfig it wrote.

Usage: python_client_check.py KUBECONFIG NODE

Prints one line per fact for the calling test to check, and exits 1 on any API error:
  node <name> <Ready status> <resource>=<capacity>/<allocatable>
  pod <namespace>/<name> <phase>
  watch <type> <namespace>/<name>
  event <reason> <kind> <namespace>/<name>
  events.k8s.io <reason> <kind> <namespace>/<name>      (the same events through EventsV1Api)
  events.k8s.io created <name> <reason> <core message> <core reportingComponent>
  created <name> <phase> <node> <label>       (a pod it creates, admitted before the answer)
  gone <HTTP status>                          (reading that pod after deleting it)
"""
import datetime
import json
import sys
import time

from kubernetes import client, config, watch


def main():
    kubeconfig, node_name = sys.argv[1], sys.argv[2]
    config.load_kube_config(config_file=kubeconfig)
    core = client.CoreV1Api()

    # The node status follows the device plugin within a second (the kubelet's sync), as on a
    # cluster: wait for it as a client would.
    gpu = "example.com/gpu"
    for _ in range(100):
        node = core.read_node(node_name)
        if gpu in (node.status.capacity or {}):
            break
        time.sleep(0.1)
    ready = next(c.type for c in node.status.conditions if c.type == "Ready" and c.status == "True")
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

    # The same events through events.k8s.io/v1. The kubelet's are old-style events without an
    # eventTime, which this client's EventsV1Event model refuses to build (as against a real
    # cluster), so the list is read as the JSON the server sent.
    events_v1 = client.EventsV1Api()
    raw = events_v1.list_namespaced_event("default", field_selector="regarding.kind=Pod",
                                          _preload_content=False)
    for item in json.loads(raw.data)["items"]:
        print("events.k8s.io %s %s %s/%s" % (item["reason"], item["regarding"]["kind"],
                                             item["regarding"]["namespace"],
                                             item["regarding"]["name"]))
    # A new-style event, as client-go's events.k8s.io recorder writes one, read back as core/v1.
    new_event = client.EventsV1Event(
        metadata=client.V1ObjectMeta(name="from-python.check"),
        event_time=datetime.datetime.now(datetime.timezone.utc),
        reporting_controller="example.com/python", reporting_instance="python-1",
        action="Check", reason="Checked", type="Normal", note="written through events.k8s.io",
        regarding=client.V1ObjectReference(kind="Node", name=node_name))
    written = events_v1.create_namespaced_event("default", new_event)
    read_back = events_v1.read_namespaced_event(written.metadata.name, "default")
    as_core = core.read_namespaced_event(read_back.metadata.name, "default")
    print("events.k8s.io created %s %s by python: %s %s" % (
        as_core.metadata.name, read_back.reason, as_core.message, as_core.reporting_component))

    # A pod created through the API is admitted as kdpctl admits one; deleting it frees its GPU.
    pod = client.V1Pod(
        metadata=client.V1ObjectMeta(name="from-python", labels={"made-by": "python"}),
        spec=client.V1PodSpec(containers=[client.V1Container(
            name="main", image="registry.example.com/app:1",
            resources=client.V1ResourceRequirements(limits={gpu: "1"}))]))
    created = core.create_namespaced_pod("default", pod)
    # (Debian's client predates allocatedResourcesStatus: the devices are the kubectl test's.)
    print("created %s %s %s %s" % (created.metadata.name, created.status.phase,
                                   created.spec.node_name, created.metadata.labels["made-by"]))
    core.delete_namespaced_pod("from-python", "default")
    try:
        core.read_namespaced_pod("from-python", "default")
        print("gone 200")
    except client.exceptions.ApiException as error:
        print("gone %d" % error.status)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except client.exceptions.ApiException as error:
        print("API error: %s %s" % (error.status, error.body), file=sys.stderr)
        sys.exit(1)
