// SPDX-License-Identifier: Apache-2.0
// parse_tf_config: the ranks it gives and the errors for each malformation.
#include "bootstrap/tf_config.h"

#include "bootstrap_test_util.h"

namespace dt::bootstrap {
namespace {

using test::error_of;

std::string error(const std::string &value)
{
    return error_of([&] { parse_tf_config("TF_CONFIG", value); }, DT_ERR_INVALID_CONFIG);
}

TEST(TfConfig, WorkersInOrder)
{
    TfConfig tf = parse_tf_config(
        "TF_CONFIG", R"({"cluster":{"worker":["a:1","b:2"]},"task":{"type":"worker","index":1}})");
    EXPECT_EQ(tf.members, (std::vector<std::string>{"a:1", "b:2"}));
    EXPECT_EQ(tf.rank, 1);
    EXPECT_EQ(tf.local_rank, 0);
    EXPECT_EQ(tf.local_size, 1);
}

TEST(TfConfig, ChiefIsRankZeroAndOtherFieldsAreIgnored)
{
    const char *cluster = R"({"cluster": {"chief": ["c:5"], "worker": ["w:5", "w:6"],
        "ps": ["p:1"], "evaluator": ["e:1"]}, "environment": "cloud", "rpc_layer": null,
        "extra": [1.5e3, -2, true, false, {"\u00e9\n": "\"\\/"}], "task": )";
    TfConfig tf = parse_tf_config("TF_CONFIG", std::string(cluster) +
                                                   R"({"type": "chief", "index": 0}})");
    EXPECT_EQ(tf.rank, 0);
    EXPECT_EQ(tf.members.size(), 3u);
    tf = parse_tf_config("TF_CONFIG",
                         std::string(cluster) + R"({"type": "worker", "index": 1}})");
    EXPECT_EQ(tf.rank, 2);
    EXPECT_EQ(tf.local_rank, 1); // w:5 and w:6 share the host "w"
    EXPECT_EQ(tf.local_size, 2);
    EXPECT_EQ(tf.members.front(), "c:5");
}

TEST(TfConfig, MalformedJsonSaysWhereAndWhat)
{
    EXPECT_NE(error("").find("TF_CONFIG is not valid JSON: the value ends early at offset 0"),
              std::string::npos);
    EXPECT_NE(error("{'cluster': 1}").find("expected a quoted key at offset 1"),
              std::string::npos);
    EXPECT_NE(error(R"({"cluster": {"worker": ["a:1",]}})").find("unexpected character ']'"),
              std::string::npos);
    EXPECT_NE(error(R"({"a": 1} x)").find("unexpected text after the JSON value"),
              std::string::npos);
    EXPECT_NE(error(R"({"a": "x)").find("a string is not closed"), std::string::npos);
    EXPECT_NE(error(R"({"a": 1, "a": 2})").find("the key \"a\" appears twice"),
              std::string::npos);
    EXPECT_NE(error(R"({"a": 1.})").find("a number has no digits after '.'"),
              std::string::npos);
    EXPECT_NE(error(std::string(100, '[')).find("nested too deeply"), std::string::npos);
}

TEST(TfConfig, MissingOrWrongFieldsAreNamed)
{
    const std::pair<const char *, const char *> cases[] = {
        {"[]", "TF_CONFIG is a list; expected an object"},
        {R"({"task": {"type": "worker", "index": 0}})", "TF_CONFIG has no \"cluster\" object"},
        {R"({"cluster": {}, "task": {"type": "worker", "index": 0}})",
         "cluster has no \"worker\" list"},
        {R"({"cluster": {"worker": "a:1"}, "task": {"type": "worker", "index": 0}})",
         "cluster.worker is a string; expected a list"},
        {R"({"cluster": {"worker": [7]}, "task": {"type": "worker", "index": 0}})",
         "cluster.worker[0] is a number"},
        {R"({"cluster": {"worker": ["nohost"]}, "task": {"type": "worker", "index": 0}})",
         "TF_CONFIG cluster.worker[0]"},
        {R"({"cluster": {"worker": ["a:1"]}})", "TF_CONFIG has no \"task\" object"},
        {R"({"cluster": {"worker": ["a:1"]}, "task": {"index": 0}})", "task.type is missing"},
        {R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker"}})",
         "task.index is missing"},
        {R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": -1}})",
         "task.index must be a non-negative integer"},
        {R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 0.5}})",
         "task.index must be a non-negative integer"},
        {R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 1}})",
         "task.index is 1 but cluster.worker lists 1 member (0..0)"},
        {R"({"cluster": {"worker": ["a:1"], "ps": ["p:1"]}, "task": {"type": "ps", "index": 0}})",
         "task.type is \"ps\""},
        {R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "chief", "index": 0}})",
         "the cluster has no \"chief\" list"},
        {R"({"cluster": {"chief": ["a:1", "b:1"]}, "task": {"type": "chief"}})",
         "a cluster has at most one chief"},
    };
    for (auto [value, want] : cases) {
        std::string e = error(value);
        EXPECT_NE(e.find(want), std::string::npos) << value << "\n -> " << e;
    }
}

} // namespace
} // namespace dt::bootstrap
