.target amx
.input 0 @64 u8[]
.input 1 @128 u8[]
.output 0 @192 bf16[5,5]
.const @192 80571342804b807fc07f96be0341ff3f807fc07f0000ff3fb03fc0ffc07f807f807fc0ff807fc07fc0ffc0ffc07fc0ff807f
