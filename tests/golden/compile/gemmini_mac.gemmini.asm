# paper/gemmini_mac.hlo compiled for gemmini by accv compile
.target gemmini
.input 0 @64 s8[16,16]
.input 1 @320 s8[16,16]
.input 2 @576 s8[16,16]
.output 0 @832 s8[16,16]
mvin_spad(rows=16, cols=16, stride=16, scale=1065353216, dram=64, sp=32)
mvin_spad(rows=16, cols=16, stride=16, scale=1065353216, dram=320, sp=16)
mvin_spad(rows=16, cols=16, stride=16, scale=1065353216, dram=576, sp=0)
preload_ws(rows=16, cols=16, b=16)
matmul_ws_bias_spad(a_rows=16, a_cols=16, c_rows=16, c_cols=16, relu=0, a=32, d=0, c=0)
mvout_spad(rows=16, cols=16, stride=16, sp=0, dram=832)
