.target amx
.input 0 @64 u8[]
.input 1 @128 u8[]
.input 2 @192 bf16[]
.input 3 @256 bf16[]
.output 0 @320 bf16[8]
.const @390 b5bd
.const @392 42bc
.const @394 80bf
.const @396 2040
vmovdqu8_load(n=2, dst=0, addr=256)
vmovdqu8_store(n=2, src=0, addr=384)
vmovdqu8_store(n=2, src=0, addr=386)
vmovdqu8_store(n=2, src=0, addr=388)
vmovdqu8_store(n=2, src=0, addr=398)
vmovdqu8_load(n=16, dst=0, addr=384)
vmovdqu8_store(n=16, src=0, addr=320)
