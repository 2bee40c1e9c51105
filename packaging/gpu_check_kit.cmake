# The GPU acceptance kit in the packages: scripts/gpu-check and everything it runs, installed when
# backend/cuda and its tests are built, so that an unpacked .tar.gz checks a GPU machine without a
# build tree (docs/gpu.md, "Checking a GPU machine"):
#   lib/loom/gpu-check/   loom_backend_cuda_tests, loom_backend_ops_test, loom_parity_compare,
#                         loom_attention_bench, loom_comm_nccl_tests (with NCCL)
#   share/loom/scripts/   gpu-check, gpu_check_learning.py, gpu_check_inference.py, gpu_check_kernels.py,
#                         gpu_check_races.py, gpu_check_unpadded.py, gpu_check_summary.py,
#                         bench/compare-pytorch-cuda, bench/pytorch_bert_train.py,
#                         bench/compare-attention, bench/pytorch_attention.py, bench/compare-pytorch-inference,
#                         bench/pytorch_bert_inference.py, bench/pytorch_modernbert_train.py
#   share/loom/tests/     the GPU end-to-end test with the scripts it sources and its fixtures
# share/loom/ thereby has the source tree's layout (configs/, scripts/, tests/) that these scripts
# expect. bundle-libraries.sh gives the programs RUNPATH $ORIGIN/../lib like the plugins.
if(NOT TARGET loom_backend_cuda_tests OR NOT TARGET loom_backend_ops_test OR NOT TARGET loom_parity_compare)
  return()
endif()
install(TARGETS loom_backend_cuda_tests loom_backend_ops_test loom_parity_compare loom_attention_bench
        RUNTIME DESTINATION lib/loom/gpu-check)
if(TARGET loom_comm_nccl_tests)
  install(TARGETS loom_comm_nccl_tests RUNTIME DESTINATION lib/loom/gpu-check)
endif()
install(PROGRAMS ${PROJECT_SOURCE_DIR}/scripts/gpu-check DESTINATION share/loom/scripts)
install(FILES ${PROJECT_SOURCE_DIR}/scripts/gpu_check_learning.py ${PROJECT_SOURCE_DIR}/scripts/gpu_check_inference.py
              ${PROJECT_SOURCE_DIR}/scripts/gpu_check_kernels.py ${PROJECT_SOURCE_DIR}/scripts/gpu_check_races.py
              ${PROJECT_SOURCE_DIR}/scripts/gpu_check_unpadded.py ${PROJECT_SOURCE_DIR}/scripts/gpu_check_summary.py
        DESTINATION share/loom/scripts)
install(PROGRAMS ${PROJECT_SOURCE_DIR}/scripts/bench/compare-pytorch-cuda
                 ${PROJECT_SOURCE_DIR}/scripts/bench/pytorch_bert_train.py
                 ${PROJECT_SOURCE_DIR}/scripts/bench/compare-attention
                 ${PROJECT_SOURCE_DIR}/scripts/bench/pytorch_attention.py
                 ${PROJECT_SOURCE_DIR}/scripts/bench/compare-pytorch-inference
                 ${PROJECT_SOURCE_DIR}/scripts/bench/pytorch_bert_inference.py
                 ${PROJECT_SOURCE_DIR}/scripts/bench/pytorch_modernbert_train.py DESTINATION share/loom/scripts/bench)
install(PROGRAMS ${PROJECT_SOURCE_DIR}/tests/e2e/gpu_training_test.sh ${PROJECT_SOURCE_DIR}/tests/e2e/mpirun.sh
        DESTINATION share/loom/tests/e2e)
install(FILES ${PROJECT_SOURCE_DIR}/tests/e2e/train_fixture.sh ${PROJECT_SOURCE_DIR}/tests/e2e/sotu_shards.sh
        DESTINATION share/loom/tests/e2e)
install(FILES ${PROJECT_SOURCE_DIR}/tests/gpu/gpu_requirement.sh DESTINATION share/loom/tests/gpu)
install(PROGRAMS ${PROJECT_SOURCE_DIR}/tests/parity/run_parity.sh ${PROJECT_SOURCE_DIR}/tests/parity/run_unpadded.sh
        DESTINATION share/loom/tests/parity)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/tests/fixtures/parity ${PROJECT_SOURCE_DIR}/tests/fixtures/parity-modernbert
                  ${PROJECT_SOURCE_DIR}/tests/fixtures/train
        DESTINATION share/loom/tests/fixtures)
