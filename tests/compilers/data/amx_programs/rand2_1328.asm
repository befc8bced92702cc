.target amx
.input 0 @64 bf16[]
.input 1 @128 bf16[]
.output 0 @192 u8[6,4,1]
.const @192 0894803fffc824000843767f020240f0f1802b404940ff36
