// SPDX-License-Identifier: Apache-2.0
// DISTTRAIN_CUDNN_BATCHNORM and the choice it makes between the cuDNN plugin's own batch
// norm kernels and cuDNN's (cudnn_bn_choice.h), on the CPU: the plugin itself needs a GPU.
#include "cudnn_bn_choice.h"

#include <disttrain/plugin/compute.h>

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace dtp::cudnn {
namespace {

TEST(CudnnBatchnormChoice, SettingValues)
{
    EXPECT_EQ(batchnorm_kernels_setting(nullptr), BatchnormKernels::automatic);
    EXPECT_EQ(batchnorm_kernels_setting(""), BatchnormKernels::automatic);
    EXPECT_EQ(batchnorm_kernels_setting("auto"), BatchnormKernels::automatic);
    EXPECT_EQ(batchnorm_kernels_setting("native"), BatchnormKernels::native);
    EXPECT_EQ(batchnorm_kernels_setting("cudnn"), BatchnormKernels::cudnn);
}

TEST(CudnnBatchnormChoice, UnknownValueNamesTheVariableAndTheChoices)
{
    for (const char *bad : {"Native", "1", "cuDNN ", "own"}) {
        try {
            batchnorm_kernels_setting(bad);
            ADD_FAILURE() << "accepted '" << bad << "'";
        } catch (const std::invalid_argument &e) {
            const std::string why = e.what();
            EXPECT_NE(why.find(std::string("DISTTRAIN_CUDNN_BATCHNORM='") + bad + "'"),
                      std::string::npos) << why;
            for (const char *choice : {"auto", "native", "cudnn"})
                EXPECT_NE(why.find(choice), std::string::npos) << why;
        }
    }
}

TEST(CudnnBatchnormChoice, AutomaticTakesOwnKernelsButForFourDimensionalFloat16)
{
    const auto a = BatchnormKernels::automatic;
    EXPECT_TRUE(native_batchnorm(a, DTP_FLOAT32, 2));   // (rows, C): cuDNN strides by C
    EXPECT_TRUE(native_batchnorm(a, DTP_FLOAT16, 2));
    EXPECT_TRUE(native_batchnorm(a, DTP_BFLOAT16, 2));
    EXPECT_TRUE(native_batchnorm(a, DTP_BFLOAT16, 4));  // cuDNN refuses bfloat16
    EXPECT_TRUE(native_batchnorm(a, DTP_FLOAT32, 4));   // NCHW float32: faster on an H100
    EXPECT_FALSE(native_batchnorm(a, DTP_FLOAT16, 4));  // not measured: cuDNN's
}

TEST(CudnnBatchnormChoice, ForcedChoicesHoldForEveryTensor)
{
    for (const int32_t dtype : {DTP_FLOAT32, DTP_FLOAT16, DTP_BFLOAT16})
        for (const int32_t ndims : {2, 4}) {
            EXPECT_TRUE(native_batchnorm(BatchnormKernels::native, dtype, ndims));
            EXPECT_FALSE(native_batchnorm(BatchnormKernels::cudnn, dtype, ndims));
        }
}

} // namespace
} // namespace dtp::cudnn
