# examples/regression/gemmini_mac.hlo: out = sat8(A x B + C), s8[16,16] each (DIM 16, weight stationary).
# C is the bias D of the compute (added inside the array, 20 bits suffice: |A x B + C| < 2^19).
.target gemmini
.input 0 @64 s8[16,16]
.input 1 @512 s8[16,16]
.input 2 @1024 s8[16,16]
.output 0 @2048 s8[16,16]
mvin_spad(rows=16, cols=16, stride=16, scale=0x3f800000, dram=64, sp=0)      # A -> spad[0:16]
mvin_spad(rows=16, cols=16, stride=16, scale=0x3f800000, dram=512, sp=16)    # B -> spad[16:32]
mvin_spad(rows=16, cols=16, stride=16, scale=0x3f800000, dram=1024, sp=32)   # C -> spad[32:48]
preload_ws(rows=16, cols=16, b=16)
matmul_ws_bias_acc(a_rows=16, a_cols=16, c_rows=16, c_cols=16, accumulate=0, a=0, d=32, c=0)   # A x B + C
mvout_acc(rows=16, cols=16, stride=16, scale=0x3f800000, relu=0, ac=0, dram=2048)
