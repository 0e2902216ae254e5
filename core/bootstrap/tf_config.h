/* SPDX-License-Identifier: Apache-2.0 */
// TF_CONFIG, the variable TensorFlow's cluster launchers (the Kubernetes TFJob operator,
// Vertex AI, SageMaker's MultiWorkerMirroredStrategy) set on every process:
//   {"cluster": {"chief": ["host:port"], "worker": ["host:port", ...]},
//    "task": {"type": "worker", "index": 1}}
// Ranks: the chief (when the cluster has one) is rank 0, then the workers in order. The
// first member's host:port is where rank 0 serves the rendezvous store. Local rank and
// size count the members whose host is this member's host (compared as written).
#pragma once

#include <string>
#include <vector>

namespace dt::bootstrap {

struct TfConfig {
    std::vector<std::string> members; // chief first, then workers: "host:port" each
    int rank = 0;
    int local_rank = 0;
    int local_size = 1;
};

// Parses the variable's value; `what` names it in errors ("TF_CONFIG"). Throws
// DT_ERR_INVALID_CONFIG saying what is wrong: not JSON (with the offset), no
// cluster.worker list, a task type other than chief or worker (ps and evaluator take no
// part in a disttrain job), an index outside the list, a member that is not host:port.
TfConfig parse_tf_config(const std::string &what, const std::string &value);

} // namespace dt::bootstrap
